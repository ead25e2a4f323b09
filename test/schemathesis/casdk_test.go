//go:build interop

package schemathesis

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

// casdkExamples bounds each of the three runs to about half a minute on 2
// cores.
const casdkExamples = "300"

// casdkConfig steers part of the generated values to names and times the
// bundled data and the replay clock answer (the replay starts at
// 2021-06-01T00:00:00Z: observed data end there, the forecasts begin), so
// the run exercises answers as well as refusals. Array-valued location
// parameters get a fixed list: Schemathesis binds dictionaries to scalars
// only.
const casdkConfig = `
[dictionaries]
locations = { values = ["eastus", "westeurope", "DE", "aws:eu-west-1", "northeurope", "gcp:europe-west3"] }
observed = { values = ["2021-05-31T20:00:00Z", "2021-05-30T00:00:00Z", "2021-05-31T23:30:00Z", "2021-06-01T00:00:00Z", "2021-05-31T21:15:00Z"] }
forecast = { values = ["2021-06-01T00:00:00Z", "2021-06-01T06:30:00Z", "2021-06-02T12:00:00Z", "2021-06-04T23:00:00Z"] }

[parameters]
"query.time" = { dictionary = "observed", probability = 0.6 }
"query.toTime" = { dictionary = "observed", probability = 0.6 }
"query.startTime" = { dictionary = "observed", probability = 0.6 }
"query.endTime" = { dictionary = "observed", probability = 0.6 }
"query.dataStartAt" = { dictionary = "forecast", probability = 0.6 }
"query.dataEndAt" = { dictionary = "forecast", probability = 0.6 }
"body.[*].location" = { dictionary = "locations", probability = 0.8 }
"body.[*].startTime" = { dictionary = "observed", probability = 0.6 }
"body.[*].endTime" = { dictionary = "observed", probability = 0.6 }
"body.[*].requestedAt" = { dictionary = "observed", probability = 0.6 }

[[operations]]
include-path-regex = "^/emissions/(bylocation|average-carbon-intensity)$"
parameters = { "query.location" = { dictionary = "locations", probability = 0.8 }, "query.time" = { dictionary = "observed", probability = 0.6 }, "query.toTime" = { dictionary = "observed", probability = 0.6 }, "query.startTime" = { dictionary = "observed", probability = 0.6 }, "query.endTime" = { dictionary = "observed", probability = 0.6 } }

[[operations]]
include-path-regex = "^/emissions/(bylocations|bylocations/best|forecasts/current)$"
parameters = { "query.location" = ["eastus", "DE", "aws:eu-west-1"], "query.time" = { dictionary = "observed", probability = 0.6 }, "query.toTime" = { dictionary = "observed", probability = 0.6 }, "query.dataStartAt" = { dictionary = "forecast", probability = 0.6 }, "query.dataEndAt" = { dictionary = "forecast", probability = 0.6 } }
`

// TestCarbonAwareSDKConformance runs Schemathesis with the Carbon Aware
// SDK's own OpenAPI document (the swagger.yaml the exporter carries, read
// from the shared peers: the repository keeps no copy) against carbongate's
// /casdk routes, twice: with generated values only, and with part of them
// steered to known locations and times; then with carbongate's own
// document of those routes. Every check runs but
// positive_data_acceptance (a schema-valid location may be unknown, a
// schema-valid period may lack data: 400 as in the SDK); a 5xx, an answer
// off the SDK's schemas or an error in the gateway's log fails the test.
func TestCarbonAwareSDKConformance(t *testing.T) {
	swagger := filepath.Join(services.ExporterSource(t), "pkg", "sdk", "api", "swagger.yaml")
	venv := services.Venv(t, SchemathesisEnv)
	base, gw := startGateway(t)
	dir := t.TempDir()
	// Not named schemathesis.toml, which Schemathesis would also read in
	// the unsteered run.
	config := filepath.Join(dir, "steer.toml")
	if err := os.WriteFile(config, []byte(casdkConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	swaggerDoc, err := os.ReadFile(swagger)
	if err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }
	sdkOps := countOperations(t, swaggerDoc, all)
	ownOps := countOperations(t, services.Call(t, http.MethodGet, base+"/openapi.json", nil), func(path string) bool { return strings.HasPrefix(path, "/casdk/") })
	sdk := []string{"run", swagger, "--url", base + "/casdk"}
	for _, r := range []struct {
		name string
		ops  int
		args []string
	}{
		{"generated", sdkOps, sdk},
		{"steered", sdkOps, append([]string{"--config-file", config}, sdk...)},
		// carbongate's own document of these routes (its extra answers and
		// headers), which TestOpenAPIConformance leaves to this test.
		{"carbongate's document", ownOps, []string{"run", base + "/openapi.json", "--include-path-regex", "^/casdk/"}},
	} {
		t.Run(r.name, func(t *testing.T) { run(t, venv, dir, casdkExamples, r.ops, r.args...) })
	}
	if log := gw.Log(); strings.Contains(log, `"level":"ERROR"`) {
		t.Fatalf("the gateway logged errors during the run:\n%s", errorLines(log))
	}
}
