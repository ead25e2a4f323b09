package runtime

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/controller"
	"github.com/carbongate/carbongate/gateway/karmada"
	"github.com/carbongate/carbongate/gateway/kserve"
)

// federationSyncTimeout bounds the first list of a Karmada API server's
// clusters and namespaces at startup.
const federationSyncTimeout = 30 * time.Second

// federationPart is the view of the Karmada API server whose
// ResourceBindings the webhook places (--karmada-kubeconfig).
type federationPart struct {
	cancel context.CancelFunc
}

// open starts the view of the Karmada API server of kubeconfig ("": none)
// and completes wl with what binding decisions need besides it: the
// clock, the signer (--decision-key-file) and the hold defaults, also
// without --controller. With --controller the bindings placed are held
// too, and the controller releases them.
func (f *federationPart) open(m *Runtime, kubeconfig string, wl *admission.Workloads) (admission.Bindings, error) {
	if kubeconfig == "" {
		return admission.Bindings{}, nil
	}
	cfg, err := karmadaREST(m, kubeconfig)
	if err != nil {
		return admission.Bindings{}, err
	}
	view, err := karmada.New(cfg)
	if err != nil {
		return admission.Bindings{}, fmt.Errorf("--karmada-kubeconfig: %w", err)
	}
	if wl.Signer == nil {
		c := &controllerPart{Controller: &m.Controller}
		if wl.Signer, err = c.loadSigner(m); err != nil {
			return admission.Bindings{}, err
		}
		wl.Now, wl.Duration, wl.MaxDelay = m.clk.Now, m.Controller.HoldDuration, m.Controller.HoldMaxDelay
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := view.Start(ctx, federationSyncTimeout); err != nil {
		cancel()
		return admission.Bindings{}, fmt.Errorf("--karmada-kubeconfig: %w", err)
	}
	f.cancel = cancel
	hold := m.controller.ctl != nil // the controller releases what is held
	m.Logger.Info("placing Karmada ResourceBindings", "clusters", len(view.Clusters()), "hold", hold)
	return admission.Bindings{Federation: view, Hold: hold}, nil
}

// close stops the view's informers.
func (f *federationPart) close() {
	if f.cancel != nil {
		f.cancel()
	}
}

// karmadaREST reads the kubeconfig of --karmada-kubeconfig for the
// webhook's view and the controller, with --kube-qps and --kube-burst:
// every binding CREATE reads its workload, and client-go's default limit
// (5 requests/s) would queue a wave of bindings for tens of seconds.
func karmadaREST(m *Runtime, kubeconfig string) (*rest.Config, error) {
	cfg, err := kserve.RESTConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--karmada-kubeconfig: %s", forecast.ErrorMessage(err))
	}
	cfg.QPS, cfg.Burst = float32(cmp.Or(m.Controller.QPS, controller.DefaultQPS)), cmp.Or(m.Controller.Burst, controller.DefaultBurst)
	return cfg, nil
}
