package route

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

const good = `
- zone: de
  protocol: grpc
  url: carbon-forecaster-de.models.example.com:80
  model: carbon-forecaster-DE
  authority: carbon-forecaster-de.models.example.com
- zone: US-CAL-CISO
  protocol: REST
  url: http://10.0.0.7:8080/prefix
  model: carbon-forecaster-US-CAL-CISO
- zone: generic
  protocol: rest
  url: https://generic.example.com
  model: carbon-forecaster-generic
`

func TestParse(t *testing.T) {
	t.Parallel()
	eps, err := Parse(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	want := []Endpoint{
		{Zone: "DE", Protocol: "grpc", URL: "carbon-forecaster-de.models.example.com:80", Model: "carbon-forecaster-DE", Authority: "carbon-forecaster-de.models.example.com"},
		{Zone: "US-CAL-CISO", Protocol: "rest", URL: "http://10.0.0.7:8080/prefix", Model: "carbon-forecaster-US-CAL-CISO"},
		{Zone: "", Protocol: "rest", URL: "https://generic.example.com", Model: "carbon-forecaster-generic"},
	}
	if len(eps) != len(want) {
		t.Fatalf("got %d endpoints, want %d", len(eps), len(want))
	}
	for i := range want {
		if eps[i] != want[i] {
			t.Fatalf("endpoint %d=%+v, want %+v", i, eps[i], want[i])
		}
	}
	if eps, err := Parse(strings.NewReader("")); err != nil || len(eps) != 0 {
		t.Fatalf("empty file: %v %v", eps, err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note, yaml, want string
	}{
		{"not a list", "zone: DE", "cannot unmarshal"},
		{"unknown key", "- {zone: DE, protocol: rest, url: 'http://h', model: m, weight: 3}", "field weight not found"},
		{"no zone", "- {protocol: rest, url: 'http://h', model: m}", "route 1 (model m): zone is required"},
		{"bad zone", "- {zone: 'D E', protocol: rest, url: 'http://h', model: m}", "route 1 (zone D E): zone id"},
		{"no protocol", "- {zone: DE, url: 'http://h', model: m}", "route 1 (zone DE): protocol is required"},
		{"bad protocol", "- {zone: DE, protocol: http, url: 'http://h', model: m}", `route 1 (zone DE): protocol "http" is not rest or grpc`},
		{"no url", "- {zone: DE, protocol: rest, model: m}", "route 1 (zone DE): url is required"},
		{"rest url without scheme", "- {zone: DE, protocol: rest, url: 'h:80', model: m}", "is not an http(s)"},
		{"grpc url with scheme", "- {zone: DE, protocol: grpc, url: 'http://h:80', model: m}", "not a URL with a scheme"},
		{"grpc url without port", "- {zone: DE, protocol: grpc, url: 'h', model: m}", "host:port"},
		{"no model", "- {zone: DE, protocol: rest, url: 'http://h'}", "route 1 (zone DE): model is required"},
		{"duplicate zone", "- {zone: DE, protocol: rest, url: 'http://h', model: m}\n- {zone: de, protocol: rest, url: 'http://i', model: n}", "route 2 (zone de): zone already routed by route 1"},
		{"two generics", "- {zone: generic, protocol: rest, url: 'http://h', model: m}\n- {zone: GENERIC, protocol: rest, url: 'http://i', model: n}", "route 2 (zone GENERIC): zone already routed by route 1"},
		{"two documents", "- {zone: DE, protocol: rest, url: 'http://h', model: m}\n---\n- {zone: PL, protocol: rest, url: 'http://h', model: m}", "one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.yaml))
			if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err=%v, want EINVALID containing %q", err, tt.want)
			}
		})
	}
}

func TestFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "routes.yaml")
	if _, err := NewFile(path); err == nil {
		t.Fatal("NewFile of a missing file succeeded")
	}
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := NewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := f.Endpoints(context.Background())
	if err != nil || len(eps) != 3 {
		t.Fatalf("eps=%v err=%v", eps, err)
	}
	// Edits are read on the next call; a broken edit is an error.
	if err := os.WriteFile(path, []byte("- {zone: DE}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Endpoints(context.Background()); err == nil || !strings.Contains(err.Error(), "route 1 (zone DE)") {
		t.Fatalf("err=%v, want the broken entry named", err)
	}
}
