// Package route says where each zone's forecasting model is served: the
// Endpoint type shared by static configuration and KServe discovery, the
// Source interface both implement, and the static route configuration: a
// YAML list of OIP model endpoints, one per zone plus at most one for the
// generic model (File, Load, Parse; Static for a list in code), routed
// through the same way as KServe discovery.
//
//	# routes.yaml
//	- zone: DE
//	  protocol: grpc
//	  url: carbon-forecaster-de.models.example.com:443
//	  model: carbon-forecaster-de
//	  authority: carbon-forecaster-de.models.example.com
//	- zone: generic
//	  protocol: rest
//	  url: http://carbon-forecaster-generic.models.svc
//	  model: carbon-forecaster-generic
package route

import (
	"context"

	"github.com/carbongate/carbongate/forecast"
)

// Protocols an Endpoint may speak.
const (
	ProtocolREST = "rest"
	ProtocolGRPC = "grpc"
)

// Endpoint is one model served over the Open Inference Protocol.
type Endpoint struct {
	Zone      forecast.Zone // "" for the generic model
	Protocol  string        // ProtocolREST or ProtocolGRPC
	URL       string        // REST base URL (http://host:port) or gRPC target (host:port)
	Model     string        // OIP model name (the InferenceService name under KServe)
	Authority string        // optional :authority / Host override for ingress routing
}

// Generic reports whether e serves the generic model.
func (e Endpoint) Generic() bool { return e.Zone == "" }

// Source lists the endpoints to route to. Implementations return the full
// current set on every call.
type Source interface {
	Endpoints(ctx context.Context) ([]Endpoint, error)
}
