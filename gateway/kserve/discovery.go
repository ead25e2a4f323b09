package kserve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/route"
)

// DiscoveryOptions tune a Discovery. The zero value routes over REST to every
// signal.
type DiscoveryOptions struct {
	// Protocol is route.ProtocolREST (default) or route.ProtocolGRPC.
	Protocol string
	// Signal, when set, keeps only InferenceServices labelled
	// carbongate.io/signal=<Signal>.
	Signal forecast.Signal
	// GRPCPort is used to build the gRPC target from the predictor's host
	// when KServe publishes no status.components.predictor.grpcUrl (KServe
	// v0.20 never sets it). Default GRPCPort (8081, the runtime's h2c port).
	GRPCPort int32
	// Logger receives a debug line for every InferenceService left out.
	// nil discards.
	Logger *slog.Logger
}

// Discovery lists carbongate's InferenceServices through the Kubernetes API.
// It implements route.Source and is safe for concurrent use.
type Discovery struct {
	c         client.Client
	namespace string
	opts      DiscoveryOptions
}

var _ route.Source = (*Discovery)(nil)

// NewScheme returns a runtime scheme with the InferenceService types
// registered under serving.kserve.io/v1beta1, as a client for Discovery
// needs.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		return nil, fmt.Errorf("kserve: register v1beta1: %w", err)
	}
	return s, nil
}

// NewDiscovery returns a Discovery reading InferenceServices from namespace
// through c ("" means every namespace, which needs cluster-wide list rights).
// c's scheme must know the InferenceService types (see NewScheme). Invalid
// options are replaced by their defaults; use DiscoveryOptions.Validate to
// reject them instead.
func NewDiscovery(c client.Client, namespace string, opts DiscoveryOptions) *Discovery {
	if opts.Protocol != route.ProtocolGRPC {
		opts.Protocol = route.ProtocolREST
	}
	if opts.GRPCPort <= 0 || opts.GRPCPort > 65535 {
		opts.GRPCPort = GRPCPort
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Discovery{c: c, namespace: namespace, opts: opts}
}

// Validate reports options NewDiscovery would silently replace, as a
// *forecast.Error with code EINVALID naming the field.
func (o DiscoveryOptions) Validate() error {
	switch o.Protocol {
	case "", route.ProtocolREST, route.ProtocolGRPC:
	default:
		return forecast.FieldErrorf(forecast.EINVALID, "protocol", "protocol %q is not one of rest, grpc", o.Protocol)
	}
	if o.Signal != "" {
		if _, err := forecast.ParseSignal(string(o.Signal)); err != nil {
			return forecast.FieldErrorf(forecast.EINVALID, "signal", "%s", forecast.ErrorMessage(err))
		}
	}
	if o.GRPCPort < 0 || o.GRPCPort > 65535 {
		return forecast.FieldErrorf(forecast.EINVALID, "grpc_port", "gRPC port %d is out of range", o.GRPCPort)
	}
	return nil
}

// RESTConfig returns the Kubernetes client configuration: the in-cluster
// service account when kubeconfig is "", else the named kubeconfig file
// (its current context).
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "no in-cluster Kubernetes configuration", Err: err}
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EINVALID, Field: "kubeconfig", Message: "kubeconfig does not load", Err: err}
	}
	return cfg, nil
}

// NewDiscoveryFromConfig builds a Kubernetes client from cfg (nil: the
// in-cluster configuration, see RESTConfig) and returns a Discovery over it.
// It does not contact the API server; the first Endpoints call does.
func NewDiscoveryFromConfig(cfg *rest.Config, namespace string, opts DiscoveryOptions) (*Discovery, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if namespace != "" {
		if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "namespace", "namespace %q: %s", namespace, strings.Join(errs, "; "))
		}
	}
	if cfg == nil {
		var err error
		if cfg, err = RESTConfig(""); err != nil {
			return nil, err
		}
	}
	s, err := NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "cannot build Kubernetes client", Err: err}
	}
	return NewDiscovery(c, namespace, opts), nil
}

// Endpoints lists the InferenceServices carrying the carbongate.io/zone
// label (and the signal label when DiscoveryOptions.Signal is set) and
// returns one Endpoint for each that is ready, sorted by zone with the
// generic model last, then by name:
//
//   - ready means the Ready and PredictorReady conditions are True;
//   - Zone is the parsed label, "" for the generic model ("generic");
//   - Model is the InferenceService name (the OIP model name);
//   - URL (REST) is status.components.predictor.restUrl, else .url, else
//     .address.url, as scheme://host[:port][/path] (no trailing slash; a
//     path is kept for path-based ingress routing);
//   - URL (gRPC) is host:port of predictor.grpcUrl, else the predictor's
//     host with DiscoveryOptions.GRPCPort;
//   - Authority is the host of status.url ("" when unset) for routing
//     through an ingress.
//
// InferenceServices that are not ready, carry an invalid zone label or have
// no usable URL are left out and logged at debug level. Several ready
// services for one zone (e.g. both signals when no Signal filter is set) are
// all returned. A failed list returns an EUNAVAILABLE *forecast.Error
// wrapping the client error (context errors stay visible to errors.Is).
func (d *Discovery) Endpoints(ctx context.Context) ([]route.Endpoint, error) {
	sel := client.MatchingLabels{}
	if d.opts.Signal != "" {
		sel[LabelSignal] = string(d.opts.Signal)
	}
	var list InferenceServiceList
	opts := []client.ListOption{client.HasLabels{LabelZone}, sel}
	if d.namespace != "" {
		opts = append(opts, client.InNamespace(d.namespace))
	}
	if err := d.c.List(ctx, &list, opts...); err != nil {
		return nil, &forecast.Error{Code: forecast.EUNAVAILABLE, Message: "cannot list KServe InferenceServices", Err: err}
	}
	out := make([]route.Endpoint, 0, len(list.Items))
	for i := range list.Items {
		isvc := &list.Items[i]
		ep, why := d.endpoint(isvc)
		if why != "" {
			d.opts.Logger.LogAttrs(ctx, slog.LevelDebug, "kserve: skipping InferenceService",
				slog.String("namespace", isvc.Namespace), slog.String("name", isvc.Name), slog.String("reason", why))
			continue
		}
		out = append(out, ep)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Generic() != b.Generic() {
			return b.Generic()
		}
		if a.Zone != b.Zone {
			return a.Zone < b.Zone
		}
		return a.Model < b.Model
	})
	return out, nil
}

// endpoint converts one InferenceService, or says why it cannot.
func (d *Discovery) endpoint(isvc *InferenceService) (route.Endpoint, string) {
	label := isvc.Labels[LabelZone]
	var zone forecast.Zone
	if label != GenericZone {
		z, err := forecast.ParseZone(label)
		if err != nil {
			return route.Endpoint{}, fmt.Sprintf("label %s=%q: %s", LabelZone, label, forecast.ErrorMessage(err))
		}
		zone = z
	}
	st := &isvc.Status
	if !st.IsConditionTrue(ConditionReady) || !st.IsConditionTrue(ConditionPredictorReady) {
		return route.Endpoint{}, "not ready"
	}
	pred := st.Components[PredictorComponent]
	ep := route.Endpoint{Zone: zone, Protocol: d.opts.Protocol, Model: isvc.Name}
	if u := parseURL(st.URL); u != nil {
		ep.Authority = u.Host
	}
	base := firstURL(pred.RestURL, pred.URL, addressURL(pred.Address))
	if d.opts.Protocol == route.ProtocolGRPC {
		if g := parseURL(pred.GrpcURL); g != nil && g.Host != "" {
			ep.URL = hostPort(g, 0)
		} else if base != nil {
			ep.URL = hostPort(base, d.opts.GRPCPort)
		}
	} else if base != nil {
		ep.URL = base.Scheme + "://" + base.Host + strings.TrimRight(base.Path, "/")
	}
	if ep.URL == "" {
		return route.Endpoint{}, "ready but status.components.predictor has no URL"
	}
	return ep, ""
}

// parseURL parses a status URL as knative's apis.URL does (url.Parse); ""
// and an unparsable URL are nil.
func parseURL(s string) *url.URL {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil
	}
	return u
}

// firstURL returns the first of us that parses and has a host.
func firstURL(us ...string) *url.URL {
	for _, s := range us {
		if u := parseURL(s); u != nil && u.Host != "" {
			return u
		}
	}
	return nil
}

func addressURL(a *Addressable) string {
	if a == nil {
		return ""
	}
	return a.URL
}

// hostPort returns u's host:port. With port > 0 it replaces u's port;
// otherwise a missing port defaults to 443 for https/grpcs and 80 else.
func hostPort(u *url.URL, port int32) string {
	h := u.Hostname()
	if port > 0 {
		return net.JoinHostPort(h, fmt.Sprint(port))
	}
	if p := u.Port(); p != "" {
		return net.JoinHostPort(h, p)
	}
	if strings.EqualFold(u.Scheme, "https") || strings.EqualFold(u.Scheme, "grpcs") {
		return net.JoinHostPort(h, "443")
	}
	return net.JoinHostPort(h, "80")
}
