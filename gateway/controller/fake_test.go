package controller

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/carbongate/carbongate/gateway/hold/v1alpha1"
)

// newFake is a fake client builder on a scheme of its own: the fake client
// adds the kinds it meets as unstructured objects (Karmada's) to its
// scheme, which parallel tests sharing client-go's global one race on.
func newFake() *fake.ClientBuilder {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return fake.NewClientBuilder().WithScheme(s)
}
