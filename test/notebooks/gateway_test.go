//go:build interop

package notebooks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/oip/rest"
	"github.com/carbongate/carbongate/test/services"
)

// startGateway starts carbongate (replay clock over the bundled data) with
// one route: the zone to the MLServer at restURL, over REST.
func startGateway(t *testing.T, bin, restURL string) string {
	t.Helper()
	routes := filepath.Join(t.TempDir(), "routes.yaml")
	line := fmt.Sprintf("- {zone: %s, protocol: rest, url: %q, model: %s}\n", zone, restURL, modelName)
	if err := os.WriteFile(routes, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	return services.StartGateway(t, filepath.Join(bin, "carbongate"), "--routes", routes,
		"--clock", "replay", "--replay-start", replayStart, "--upstream-timeout", "10s")
}

// checkGatewayForecast asks the gateway for the zone's forecast: it must
// come from the zone model (the registered name and version) and equal
// what the model answers directly for the same start and history.
func checkGatewayForecast(t *testing.T, base string, c *rest.Client, y forecast.Series, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fc, body, err := (&api.Client{BaseURL: base, Timeout: 30 * time.Second}).Forecast(ctx, zone, string(signal))
	if err != nil {
		t.Fatalf("GET /v1/forecast: %v %s", err, body)
	}
	p := fc.Provenance
	if p.Source != string(forecast.SourceZone) || p.Model != modelName || p.Version != version {
		t.Fatalf("provenance %+v, want source zone from %s version %s", p, modelName, version)
	}
	if len(fc.Values) == 0 || len(fc.Values) > horizon || len(fc.Lower) != len(fc.Values) || len(fc.Upper) != len(fc.Values) {
		t.Fatalf("forecast of %d hours with %d lower and %d upper, want 1..%d of each", len(fc.Values), len(fc.Lower), len(fc.Upper), horizon)
	}
	want := infer(t, c, y, fc.Start)
	for i, v := range fc.Values {
		if !nearFP32(v, want[i]) {
			t.Fatalf("gateway hour %d (%s) = %v, model directly %v", i, fc.Start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), v, want[i])
		}
		if fc.Lower[i] > v || v > fc.Upper[i] {
			t.Errorf("hour %d: %v outside its interval [%v, %v]", i, v, fc.Lower[i], fc.Upper[i])
		}
	}
	t.Logf("gateway: %s %s from %s, %d hours, provenance %+v", fc.Zone, fc.Signal, fc.Start.Format(time.RFC3339), len(fc.Values), p)
}
