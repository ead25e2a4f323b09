package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/casdk"
	"github.com/carbongate/carbongate/gateway/httpapi"
)

// TestCASDKServed: the Carbon Aware SDK's API is served under /casdk by
// default, behind the server's middleware (request ids), described in
// /openapi.json; --casdk-root adds the root and --casdk-prefix "" drops the
// prefix.
func TestCASDKServed(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		args   []string
		served map[string]int // path → status
	}{
		{"default", nil, map[string]int{"/casdk/locations": 200, "/locations": 404}},
		{"root too", []string{"--casdk-root"}, map[string]int{"/casdk/locations": 200, "/locations": 200}},
		{"root only", []string{"--casdk-root", "--casdk-prefix", ""}, map[string]int{"/casdk/locations": 404, "/locations": 200}},
		{"off", []string{"--casdk-prefix", ""}, map[string]int{"/casdk/locations": 404, "/locations": 404}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _ := startMain(t, append([]string{"--drain-delay", "0s"}, tt.args...)...)
			for path, want := range tt.served {
				resp, err := http.Get(m.URL() + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
				}
				if want == 200 && resp.Header.Get(httpapi.HeaderRequestID) == "" {
					t.Errorf("GET %s: no request id", path)
				}
			}
			resp, err := http.Get(m.URL() + "/openapi.json")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc struct{ Paths map[string]any }
			if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			for path, want := range tt.served {
				if _, ok := doc.Paths[path]; ok != (want == 200) {
					t.Errorf("%s documented=%v, served %d", path, ok, want)
				}
			}
		})
	}
}

func TestCASDKCurrentForecastFromTheGateway(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, "--drain-delay", "0s")
	resp, err := http.Get(m.URL() + "/casdk/emissions/forecasts/current?location=westeurope&windowSize=180")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var fcs []struct {
		Location     string
		WindowSize   int
		ForecastData []struct{ Value float64 }
	}
	if err := json.NewDecoder(resp.Body).Decode(&fcs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	// A forecast of the horizon's hours holds that many less two windows
	// of three hours.
	if want := int(gateway.DefaultHorizon/time.Hour) - 2; len(fcs) != 1 || fcs[0].Location != "westeurope" || fcs[0].WindowSize != 180 || len(fcs[0].ForecastData) != want {
		t.Fatalf("forecasts %+v", fcs)
	}
	if p := resp.Header.Get(casdk.HeaderProvenance); !strings.Contains(p, `zone="NL"`) || !strings.Contains(p, "source=") {
		t.Errorf("provenance %q", p)
	}
}

func TestCASDKBadPrefix(t *testing.T) {
	t.Parallel()
	m := NewMain()
	if err := m.ParseFlags([]string{"--casdk-prefix", "casdk/"}); err == nil || !strings.Contains(err.Error(), "--casdk-prefix") {
		t.Fatalf("err=%v, want --casdk-prefix named", err)
	}
}
