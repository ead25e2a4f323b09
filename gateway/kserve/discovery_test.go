package kserve_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/gateway/route"
)

// isvc builds an InferenceService the way KServe's controller reports one:
// labels, conditions, status.url and the predictor component's URLs.
type isvcSpec struct {
	ns, name         string
	labels           map[string]string
	ready, predReady corev1.ConditionStatus
	url              string // status.url
	pred             kserve.ComponentStatus
}

func isvc(tb testing.TB, s isvcSpec) *kserve.InferenceService {
	tb.Helper()
	o := &kserve.InferenceService{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name, Labels: s.labels},
	}
	if s.ns == "" {
		o.Namespace = "carbon"
	}
	var conds []kserve.Condition
	if s.ready != "" {
		conds = append(conds, kserve.Condition{Type: "Ready", Status: s.ready})
	}
	if s.predReady != "" {
		conds = append(conds, kserve.Condition{Type: "PredictorReady", Status: s.predReady})
	}
	o.Status.Conditions = conds
	o.Status.URL = s.url
	o.Status.Components = map[string]kserve.ComponentStatus{"predictor": s.pred}
	return o
}

func zoneLabels(zone, signal string) map[string]string {
	return map[string]string{kserve.LabelZone: zone, kserve.LabelSignal: signal}
}

func newFake(tb testing.TB, objs ...client.Object) client.WithWatch {
	tb.Helper()
	s, err := kserve.NewScheme()
	if err != nil {
		tb.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// cluster is a namespace as the fake API server holds it.
func cluster(tb testing.TB) []client.Object {
	tb.Helper()
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	return []client.Object{
		// Ready zone model in Standard mode: predictor url only (what KServe v0.20 sets).
		isvc(tb, isvcSpec{name: "carbon-forecaster-de", labels: zoneLabels("DE", "lifecycle"), ready: T, predReady: T,
			url: "http://carbon-forecaster-de.carbon.example.com",
			pred: kserve.ComponentStatus{
				URL:     "http://carbon-forecaster-de-predictor.carbon.svc.cluster.local",
				Address: &kserve.Addressable{URL: "http://carbon-forecaster-de-predictor.carbon.svc.cluster.local:8080"},
			}}),
		// Ready, with explicit restUrl and grpcUrl taking precedence.
		isvc(tb, isvcSpec{name: "carbon-forecaster-se", labels: zoneLabels("SE", "lifecycle"), ready: T, predReady: T,
			url: "https://carbon-forecaster-se.carbon.example.com",
			pred: kserve.ComponentStatus{
				URL:     "http://ignored.carbon.svc",
				RestURL: "http://se-rest.carbon.svc:8080/",
				GrpcURL: "grpc://se-grpc.carbon.svc:9000",
			}}),
		// Ready generic model, reachable only through its address.
		isvc(tb, isvcSpec{name: "carbon-forecaster-generic", labels: zoneLabels("generic", "lifecycle"), ready: T, predReady: T,
			pred: kserve.ComponentStatus{
				Address: &kserve.Addressable{URL: "https://generic-predictor.carbon.svc"},
			}}),
		// Not ready: overall Ready False.
		isvc(tb, isvcSpec{name: "carbon-forecaster-fr", labels: zoneLabels("FR", "lifecycle"), ready: F, predReady: T,
			pred: kserve.ComponentStatus{URL: "http://fr-predictor.carbon.svc"}}),
		// Not ready: predictor not ready although Ready claims True.
		isvc(tb, isvcSpec{name: "carbon-forecaster-pl", labels: zoneLabels("PL", "lifecycle"), ready: T, predReady: F,
			pred: kserve.ComponentStatus{URL: "http://pl-predictor.carbon.svc"}}),
		// Not ready: no conditions at all (just created).
		isvc(tb, isvcSpec{name: "carbon-forecaster-nl", labels: zoneLabels("NL", "lifecycle")}),
		// Ready but no URL yet.
		isvc(tb, isvcSpec{name: "carbon-forecaster-es", labels: zoneLabels("ES", "lifecycle"), ready: T, predReady: T}),
		// Invalid zone label.
		isvc(tb, isvcSpec{name: "carbon-forecaster-bad", labels: zoneLabels("not_a_zone", "lifecycle"), ready: T, predReady: T,
			pred: kserve.ComponentStatus{URL: "http://bad.carbon.svc"}}),
		// Missing zone label: someone else's model.
		isvc(tb, isvcSpec{name: "sklearn-iris", labels: map[string]string{"app": "iris"}, ready: T, predReady: T,
			pred: kserve.ComponentStatus{URL: "http://iris.carbon.svc"}}),
		// Direct-signal model for DE.
		isvc(tb, isvcSpec{name: "direct-de", labels: zoneLabels("DE", "direct"), ready: T, predReady: T,
			pred: kserve.ComponentStatus{URL: "http://direct-de.carbon.svc"}}),
		// Another namespace.
		isvc(tb, isvcSpec{ns: "other", name: "carbon-forecaster-it", labels: zoneLabels("IT", "lifecycle"), ready: T, predReady: T,
			pred: kserve.ComponentStatus{URL: "http://it.other.svc"}}),
	}
}

func TestDiscoveryEndpoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note string
		ns   string
		opts kserve.DiscoveryOptions
		want []route.Endpoint
	}{
		{
			note: "rest, one signal",
			ns:   "carbon",
			opts: kserve.DiscoveryOptions{Signal: forecast.SignalLifecycle},
			want: []route.Endpoint{
				{Zone: "DE", Protocol: "rest", URL: "http://carbon-forecaster-de-predictor.carbon.svc.cluster.local", Model: "carbon-forecaster-de", Authority: "carbon-forecaster-de.carbon.example.com"},
				{Zone: "SE", Protocol: "rest", URL: "http://se-rest.carbon.svc:8080", Model: "carbon-forecaster-se", Authority: "carbon-forecaster-se.carbon.example.com"},
				{Zone: "", Protocol: "rest", URL: "https://generic-predictor.carbon.svc", Model: "carbon-forecaster-generic"},
			},
		},
		{
			note: "grpc, one signal",
			ns:   "carbon",
			opts: kserve.DiscoveryOptions{Protocol: route.ProtocolGRPC, Signal: forecast.SignalLifecycle},
			want: []route.Endpoint{
				{Zone: "DE", Protocol: "grpc", URL: "carbon-forecaster-de-predictor.carbon.svc.cluster.local:8081", Model: "carbon-forecaster-de", Authority: "carbon-forecaster-de.carbon.example.com"},
				{Zone: "SE", Protocol: "grpc", URL: "se-grpc.carbon.svc:9000", Model: "carbon-forecaster-se", Authority: "carbon-forecaster-se.carbon.example.com"},
				{Zone: "", Protocol: "grpc", URL: "generic-predictor.carbon.svc:8081", Model: "carbon-forecaster-generic"},
			},
		},
		{
			note: "grpc, custom port",
			ns:   "carbon",
			opts: kserve.DiscoveryOptions{Protocol: route.ProtocolGRPC, Signal: forecast.SignalDirect, GRPCPort: 9090},
			want: []route.Endpoint{
				{Zone: "DE", Protocol: "grpc", URL: "direct-de.carbon.svc:9090", Model: "direct-de"},
			},
		},
		{
			note: "every signal",
			ns:   "carbon",
			want: []route.Endpoint{
				{Zone: "DE", Protocol: "rest", URL: "http://carbon-forecaster-de-predictor.carbon.svc.cluster.local", Model: "carbon-forecaster-de", Authority: "carbon-forecaster-de.carbon.example.com"},
				{Zone: "DE", Protocol: "rest", URL: "http://direct-de.carbon.svc", Model: "direct-de"},
				{Zone: "SE", Protocol: "rest", URL: "http://se-rest.carbon.svc:8080", Model: "carbon-forecaster-se", Authority: "carbon-forecaster-se.carbon.example.com"},
				{Zone: "", Protocol: "rest", URL: "https://generic-predictor.carbon.svc", Model: "carbon-forecaster-generic"},
			},
		},
		{
			note: "other namespace",
			ns:   "other",
			want: []route.Endpoint{
				{Zone: "IT", Protocol: "rest", URL: "http://it.other.svc", Model: "carbon-forecaster-it"},
			},
		},
		{
			note: "empty namespace",
			ns:   "nothing-here",
			want: []route.Endpoint{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			d := kserve.NewDiscovery(newFake(t, cluster(t)...), tt.ns, tt.opts)
			got, err := d.Endpoints(context.Background())
			if err != nil {
				t.Fatalf("Endpoints: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Endpoints=%+v\nwant %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("endpoint %d=%+v\nwant        %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestDiscoveryAllNamespaces(t *testing.T) {
	t.Parallel()
	d := kserve.NewDiscovery(newFake(t, cluster(t)...), "", kserve.DiscoveryOptions{Signal: forecast.SignalLifecycle})
	got, err := d.Endpoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, e := range got {
		models = append(models, e.Model)
	}
	if got, want := strings.Join(models, ","), "carbon-forecaster-de,carbon-forecaster-it,carbon-forecaster-se,carbon-forecaster-generic"; got != want {
		t.Errorf("models=%s, want %s", got, want)
	}
}

func TestDiscoveryLogsSkipped(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := kserve.NewDiscovery(newFake(t, cluster(t)...), "carbon", kserve.DiscoveryOptions{Logger: log})
	if _, err := d.Endpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"name=carbon-forecaster-fr reason=\"not ready\"",
		"name=carbon-forecaster-pl reason=\"not ready\"",
		"name=carbon-forecaster-nl reason=\"not ready\"",
		"name=carbon-forecaster-es reason=\"ready but status.components.predictor has no URL\"",
		"name=carbon-forecaster-bad reason=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sklearn-iris") {
		t.Errorf("unlabelled InferenceService was listed:\n%s", out)
	}
}

func TestDiscoveryListError(t *testing.T) {
	t.Parallel()
	s, err := kserve.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, _ client.WithWatch, _ client.ObjectList, _ ...client.ListOption) error {
			return ctx.Err()
		},
	}).Build()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = kserve.NewDiscovery(c, "carbon", kserve.DiscoveryOptions{}).Endpoints(ctx)
	if got, want := forecast.ErrorCode(err), forecast.EUNAVAILABLE; got != want {
		t.Errorf("code=%q (%v), want %q", got, err, want)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err=%v, want it to wrap context.Canceled", err)
	}
}

func TestNewDiscoveryFromConfig(t *testing.T) {
	t.Parallel()
	// Construction only: no API server is contacted until Endpoints.
	d, err := kserve.NewDiscoveryFromConfig(&rest.Config{Host: "https://127.0.0.1:1"}, "carbon", kserve.DiscoveryOptions{Protocol: route.ProtocolGRPC})
	if err != nil {
		t.Fatalf("NewDiscoveryFromConfig: %v", err)
	}
	if d == nil {
		t.Fatal("nil Discovery")
	}
	for _, tt := range []struct {
		note  string
		ns    string
		opts  kserve.DiscoveryOptions
		field string
	}{
		{"bad protocol", "carbon", kserve.DiscoveryOptions{Protocol: "http"}, "protocol"},
		{"bad signal", "carbon", kserve.DiscoveryOptions{Signal: "marginal"}, "signal"},
		{"bad port", "carbon", kserve.DiscoveryOptions{GRPCPort: 70000}, "grpc_port"},
		{"bad namespace", "Carbon", kserve.DiscoveryOptions{}, "namespace"},
	} {
		_, err := kserve.NewDiscoveryFromConfig(&rest.Config{Host: "https://127.0.0.1:1"}, tt.ns, tt.opts)
		if got, want := forecast.ErrorField(err), tt.field; got != want || forecast.ErrorCode(err) != forecast.EINVALID {
			t.Errorf("%s: err=%v, want EINVALID %s", tt.note, err, want)
		}
	}
}
