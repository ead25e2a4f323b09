package runtime

import (
	"fmt"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/kserve"
	"github.com/carbongate/carbongate/gateway/route"
)

// Discovery selects KServe discovery: the gateway lists carbongate's
// InferenceServices (label carbongate.io/zone) in Namespace through the
// Kubernetes API every --route-refresh and routes to the ready ones.
type Discovery struct {
	Namespace  string // --kserve-namespace; "" = discovery off
	Kubeconfig string // --kubeconfig; "" = the in-cluster service account
	Protocol   string // --kserve-protocol: rest or grpc
	Signal     string // --kserve-signal: only InferenceServices of this signal
	GRPCPort   int    // --kserve-grpc-port: the runtime's h2c port
}

// source returns the discovery route source, or nil when discovery is off.
func (d *Discovery) source(m *Runtime) (route.Source, error) {
	if d.Namespace == "" {
		if d.Kubeconfig != "" && !m.Controller.Enabled {
			return nil, fmt.Errorf("--kubeconfig needs --kserve-namespace or --controller")
		}
		return nil, nil
	}
	if m.RoutesFile != "" {
		return nil, fmt.Errorf("--routes and --kserve-namespace are both set; use one")
	}
	cfg, err := kserve.RESTConfig(d.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %s", forecast.ErrorMessage(err))
	}
	disc, err := kserve.NewDiscoveryFromConfig(cfg, d.Namespace, kserve.DiscoveryOptions{
		Protocol: d.Protocol, Signal: forecast.Signal(d.Signal), GRPCPort: int32(d.GRPCPort), Logger: m.Logger,
	})
	if err != nil {
		if f := forecast.ErrorField(err); f != "" {
			return nil, fmt.Errorf("--kserve-%s: %s", f, forecast.ErrorMessage(err))
		}
		return nil, err
	}
	return disc, nil
}
