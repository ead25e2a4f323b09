package route

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/carbongate/carbongate/forecast"
)

// GenericZone is the zone value that names the generic model's entry.
const GenericZone = "generic"

// entry is one element of the YAML list.
type entry struct {
	Zone      string `yaml:"zone"`
	Protocol  string `yaml:"protocol"`
	URL       string `yaml:"url"`
	Model     string `yaml:"model"`
	Authority string `yaml:"authority"`
}

// Parse reads a YAML route list and validates it: every entry needs a zone
// (a zone id or "generic"), a protocol (rest or grpc), a URL (http(s)://host[:port][/path]
// for rest, host:port or dns:///host:port for grpc) and a model name; a zone
// appears at most once. Unknown keys are errors. Errors are EINVALID and name
// the entry ("route 3 (zone DE): ...").
func Parse(r io.Reader) ([]Endpoint, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var entries []entry
	if err := dec.Decode(&entries); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // an empty file routes nothing
		}
		return nil, forecast.Errorf(forecast.EINVALID, "routes: %v", err)
	}
	if err := dec.Decode(new(any)); !errors.Is(err, io.EOF) {
		return nil, forecast.Errorf(forecast.EINVALID, "routes: want one YAML document holding a list of routes")
	}
	eps := make([]Endpoint, 0, len(entries))
	seen := make(map[forecast.Zone]int, len(entries))
	for i, e := range entries {
		ep, err := e.endpoint()
		if err != nil {
			return nil, forecast.Errorf(forecast.EINVALID, "routes: route %d%s: %s", i+1, e.label(), forecast.ErrorMessage(err))
		}
		if j, dup := seen[ep.Zone]; dup {
			return nil, forecast.Errorf(forecast.EINVALID, "routes: route %d%s: zone already routed by route %d", i+1, e.label(), j+1)
		}
		seen[ep.Zone] = i
		eps = append(eps, ep)
	}
	return eps, nil
}

// label names an entry in errors by what it has.
func (e entry) label() string {
	switch {
	case e.Zone != "":
		return fmt.Sprintf(" (zone %s)", e.Zone)
	case e.Model != "":
		return fmt.Sprintf(" (model %s)", e.Model)
	}
	return ""
}

func (e entry) endpoint() (Endpoint, error) {
	var ep Endpoint
	switch z := strings.TrimSpace(e.Zone); {
	case z == "":
		return ep, forecast.Errorf(forecast.EINVALID, "zone is required (a zone id or %q)", GenericZone)
	case strings.EqualFold(z, GenericZone):
		ep.Zone = ""
	default:
		zone, err := forecast.ParseZone(z)
		if err != nil {
			return ep, err
		}
		ep.Zone = zone
	}
	ep.Protocol = strings.ToLower(strings.TrimSpace(e.Protocol))
	ep.URL = strings.TrimSpace(e.URL)
	ep.Model = strings.TrimSpace(e.Model)
	ep.Authority = strings.TrimSpace(e.Authority)
	if ep.Model == "" {
		return ep, forecast.Errorf(forecast.EINVALID, "model is required (the OIP model name)")
	}
	if strings.ContainsAny(ep.Model, "/?# ") {
		return ep, forecast.Errorf(forecast.EINVALID, "model %q may not hold '/', '?', '#' or spaces", ep.Model)
	}
	if ep.URL == "" {
		return ep, forecast.Errorf(forecast.EINVALID, "url is required")
	}
	switch ep.Protocol {
	case ProtocolREST:
		u, err := url.Parse(ep.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return ep, forecast.Errorf(forecast.EINVALID, "url %q is not an http(s)://host[:port][/path] base URL", ep.URL)
		}
	case ProtocolGRPC:
		if err := checkTarget(ep.URL); err != nil {
			return ep, err
		}
	case "":
		return ep, forecast.Errorf(forecast.EINVALID, "protocol is required (%s or %s)", ProtocolREST, ProtocolGRPC)
	default:
		return ep, forecast.Errorf(forecast.EINVALID, "protocol %q is not %s or %s", e.Protocol, ProtocolREST, ProtocolGRPC)
	}
	if strings.ContainsAny(ep.Authority, "/ ") {
		return ep, forecast.Errorf(forecast.EINVALID, "authority %q must be a host[:port]", ep.Authority)
	}
	return ep, nil
}

// checkTarget accepts a gRPC target: host:port, or dns:///host:port.
func checkTarget(t string) error {
	hp := strings.TrimPrefix(t, "dns:///")
	if strings.Contains(hp, "://") {
		return forecast.Errorf(forecast.EINVALID, "url %q: a grpc url is host:port or dns:///host:port, not a URL with a scheme", t)
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || host == "" || port == "" {
		return forecast.Errorf(forecast.EINVALID, "url %q: a grpc url is host:port or dns:///host:port", t)
	}
	return nil
}

// Load reads and validates the route file at path (see Parse).
func Load(path string) ([]Endpoint, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, forecast.Errorf(forecast.EINVALID, "routes: %v", err)
	}
	eps, err := Parse(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return eps, nil
}

// Static is a fixed list of endpoints.
type Static []Endpoint

var _ Source = Static(nil)

// Endpoints returns a copy of the list.
func (s Static) Endpoints(ctx context.Context) ([]Endpoint, error) {
	return slices.Clone(s), nil
}

// File is a route file read again on every call to Endpoints, so that edits
// reach a gateway that refreshes its routes periodically. A file that no
// longer reads or validates is an error; the caller keeps its last routes.
type File struct {
	Path string
}

var _ Source = File{}

// NewFile reads and validates the file at path once, so that a broken file
// fails at startup, and returns a File source over it.
func NewFile(path string) (File, error) {
	if _, err := Load(path); err != nil {
		return File{}, err
	}
	return File{Path: path}, nil
}

// Endpoints reads the file (see Load).
func (f File) Endpoints(ctx context.Context) ([]Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return Load(f.Path)
}
