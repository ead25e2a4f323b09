//go:build interop

package opa

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/test/services"
)

// TestSyntaxMatchesGo checks the policy's parsers against the Go code the
// same values meet elsewhere: durations against carbongate's /v1/schedule
// parser (gateway.ParseDuration), quantities against Kubernetes'
// resource.ParseQuantity, deadlines against time.RFC3339Nano.
func TestSyntaxMatchesGo(t *testing.T) {
	durations := []string{
		"PT3H", "pt3h", "PT90M", "P1DT2H", "PT0.5H", "PT0,5H", "PT.5H", "P1W", "P1W2D", "PT03H", "P2D",
		"PT1H30M15.5S", "P1DT0.000000001S", " PT3H ", "PT0H", "P0D", "P", "PT", "P1DT", "P1Y", "P1M",
		"PT1M1H", "PT1H1H", "PT1.H", "PT1..5H", "P1.5W", "PT1S2", "T1H", "PT-1H", "PT1h30m",
		"PT1234567890123H", "PT1.1234567890H", "3h", "90m", "1h30m", "1.5h", "300ms", "2h45m10s", ".5h",
		"0", "-3h", "+3h", "3", "h", "3 h", "", "3d", "1µs", "1us", "9999999999999h",
	}
	quantities := []string{
		"16Gi", "500m", "1e3", "1E3", "1.5Ti", ".5M", "+1k", "-1", "1.", "1", "0.5", "1Ki", "1K", "1KiB",
		"1.5.5", "1u", "1n", "0x10", "", " 1", "1e", "1e+3", "1e-3", "Gi", "1Ei", "1P", "+", ".", "-.", "E",
		"e3", "i", "1i", "1 ", "00.100Gi", "1.e3",
	}
	deadlines := []string{
		"2021-06-03T00:00:00Z", "2021-06-03T00:00:00.5Z", "2021-06-03T02:00:00+02:00", "2021-06-03t00:00:00z",
		"2021-06-03 00:00:00Z", "2021-06-03T00:00:00", "2021-02-30T00:00:00Z", "2021-06-03T24:00:00Z",
		"2021-06-03", "tomorrow", "2021-06-03T00:00:00.123456789Z",
	}
	in, err := json.Marshal(map[string]any{"durations": durations, "quantities": quantities, "deadlines": deadlines})
	if err != nil {
		t.Fatal(err)
	}
	const query = `x := {
		"durations": {s: n | some s in input.durations; n := data.carbongate.admission.duration_ns(s)},
		"quantities": {s | some s in input.quantities; data.carbongate.admission.quantity(s)},
		"deadlines": {s | some s in input.deadlines; data.carbongate.admission.valid_deadline(s)},
	}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, services.OPABinary(t), "eval", "--format", "json", "--data", "deploy/opa", "--stdin-input", query)
	cmd.Dir = services.RepoRoot(t)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("opa eval: %v\n%s", err, out)
	}
	var res struct {
		Result []struct {
			Bindings struct {
				X struct {
					Durations  map[string]float64 `json:"durations"`
					Quantities []string           `json:"quantities"`
					Deadlines  []string           `json:"deadlines"`
				} `json:"x"`
			} `json:"bindings"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Result) != 1 {
		t.Fatalf("opa eval: %v\n%s", err, out)
	}
	x := res.Result[0].Bindings.X

	for _, s := range durations {
		d, goErr := gateway.ParseDuration(s)
		ns, regoOK := x.Durations[s]
		switch {
		case (goErr == nil) != regoOK:
			t.Errorf("duration %q: Go error %v, Rego parses: %v", s, goErr, regoOK)
		case regoOK && (ns > 0) != (d > 0):
			t.Errorf("duration %q: Go %v, Rego %v ns: they disagree on positive", s, d, ns)
		}
	}
	for _, s := range quantities {
		_, goErr := resource.ParseQuantity(s)
		if regoOK := contains(x.Quantities, s); (goErr == nil) != regoOK {
			t.Errorf("quantity %q: Go error %v, Rego accepts: %v", s, goErr, regoOK)
		}
	}
	for _, s := range deadlines {
		_, goErr := time.Parse(time.RFC3339Nano, s)
		if regoOK := contains(x.Deadlines, s); (goErr == nil) != regoOK {
			t.Errorf("deadline %q: Go error %v, Rego accepts: %v", s, goErr, regoOK)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
