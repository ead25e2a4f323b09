package remote

import (
	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/internal/tracing"
	"github.com/carbongate/carbongate/oip"
	oipgrpc "github.com/carbongate/carbongate/oip/grpc"
	"github.com/carbongate/carbongate/oip/rest"
)

// Dial returns the client of e: oip/rest for ProtocolREST (JSON, one
// pooled HTTP transport per endpoint, Host set to e.Authority when given),
// oip/grpc for ProtocolGRPC (one HTTP/2 connection per endpoint, plaintext,
// :authority set to e.Authority when given). Neither connects before the
// first call. With tracing on, each call is a client span whose traceparent
// the model server receives. Errors are EINVALID.
func Dial(e route.Endpoint) (oip.Client, error) {
	switch e.Protocol {
	case route.ProtocolREST:
		opts := []rest.ClientOption{rest.WithTransportWrapper(tracing.Transport)}
		if e.Authority != "" {
			opts = append(opts, rest.WithHost(e.Authority))
		}
		return rest.NewClient(e.URL, opts...)
	case route.ProtocolGRPC:
		opts := []oipgrpc.ClientOption{oipgrpc.WithDialOptions(tracing.DialOptions()...)}
		if e.Authority != "" {
			opts = append(opts, oipgrpc.WithAuthority(e.Authority))
		}
		return oipgrpc.NewClient(e.URL, opts...)
	}
	return nil, forecast.Errorf(forecast.EINVALID, "endpoint %s: protocol %q is not %s or %s", Label(e), e.Protocol, route.ProtocolREST, route.ProtocolGRPC)
}
