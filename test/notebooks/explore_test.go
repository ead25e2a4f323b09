//go:build interop

// Package notebooks runs the notebooks of notebooks/ headless with
// papermill, the way `make test` does, and checks what they produce
// against carbongate's own code: 01_explore's naive-forecast errors are
// recomputed from the Go dataset loader, and 02_train_python_model's model
// is logged to a real MLflow server, served by MLServer's mlflow runtime
// and called by the gateway over OIP. Run with
// `go test -tags interop ./test/notebooks` (make test does); a missing venv
// or service fails the tests.
package notebooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/test/services"
)

// exploreSummary is the part of 01_explore's summary.json the test reads.
type exploreSummary struct {
	Signal    string   `json:"signal"`
	LeadDays  int      `json:"lead_days"`
	IssueDays int      `json:"issue_days"`
	Figures   []string `json:"figures"`
	Zones     map[string]struct {
		Hours       int                  `json:"hours"`
		Mean        float64              `json:"mean"`
		SourceShare map[string]float64   `json:"source_share"`
		MAPE        map[string][]float64 `json:"mape"`
	} `json:"zones"`
}

// TestExplore runs 01_explore on four zones and one month of issue days
// and recomputes every number it checks from the Go loader's tables: hours,
// mean intensity, source shares and the MAPE per lead day of persistence
// and the two seasonal-naive forecasts. The figures must be PNG files.
func TestExplore(t *testing.T) {
	t.Parallel()
	zones := []string{"DE", "SE", "US-CAL-CISO", "US-TEX-ERCO"}
	const signal, from, to = "direct", "2021-03-01", "2021-03-31"
	data := dataDir(t)
	out := t.TempDir()
	services.RunNotebook(t, "01_explore.ipynb", map[string]string{
		"data_dir": data, "zones": strings.Join(zones, ","), "signal": signal,
		"eval_from": from, "eval_to": to, "output_dir": out,
	}, nil)

	var s exploreSummary
	readJSON(t, filepath.Join(out, "summary.json"), &s)
	days := issueDays(t, from, to)
	if s.Signal != signal || s.IssueDays != len(days) || s.LeadDays < 1 {
		t.Fatalf("summary: signal %q, %d issue days, %d lead days; want %q, %d, ≥ 1", s.Signal, s.IssueDays, s.LeadDays, signal, len(days))
	}
	if len(s.Zones) != len(zones) {
		t.Errorf("summary has %d zones, want %d", len(s.Zones), len(zones))
	}
	for _, z := range zones {
		t.Run(z, func(t *testing.T) {
			tab := loadZone(t, data, z)
			got, ok := s.Zones[z]
			if !ok {
				t.Fatalf("no summary for %s", z)
			}
			y := tab.Series(forecast.SignalDirect)
			if got.Hours != tab.Len() {
				t.Errorf("hours %d, want %d", got.Hours, tab.Len())
			}
			closeTo(t, "mean", got.Mean, mean(y.Values))
			want := shares(tab)
			if len(got.SourceShare) != len(want) {
				t.Errorf("%d source shares, want %d", len(got.SourceShare), len(want))
			}
			for src, v := range want {
				closeTo(t, "share of "+src, got.SourceShare[src], v)
			}
			for name, period := range naiveForecasters {
				g := got.MAPE[name]
				w := naiveMAPE(t, y, days, s.LeadDays, period)
				if len(g) != len(w) {
					t.Fatalf("%s: %d lead days, want %d", name, len(g), len(w))
				}
				for d := range w {
					closeTo(t, name+" lead day "+strconv.Itoa(d+1), g[d], w[d])
				}
			}
		})
	}
	for _, f := range s.Figures {
		checkPNG(t, filepath.Join(out, f))
	}
	if len(s.Figures) == 0 {
		t.Error("summary lists no figures")
	}
}

// naiveForecasters maps the summary's names to the period repeated: 0 is
// persistence (the last hour held flat).
var naiveForecasters = map[string]int{"persistence": 0, "seasonal_naive_24h": 24, "seasonal_naive_168h": 168}

// shares is each source's share of the table's total generation.
func shares(tab *dataset.Table) map[string]float64 {
	sums, total := map[string]float64{}, 0.0
	for src, v := range tab.Sources {
		for _, x := range v {
			sums[src] += x
			total += x
		}
	}
	for src := range sums {
		sums[src] /= total
	}
	return sums
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func dataDir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(services.RepoRoot(tb), "forecast", "dataset", "bundled", "data")
}

func loadZone(tb testing.TB, dir, zone string) *dataset.Table {
	tb.Helper()
	tab, issues, err := dataset.LoadFile(filepath.Join(dir, zone+".csv.gz"))
	if err != nil {
		tb.Fatalf("load %s: %v", zone, err)
	}
	if len(issues) > 0 {
		tb.Fatalf("load %s: %d issues, first %v", zone, len(issues), issues[0])
	}
	return tab
}

func readJSON(tb testing.TB, path string, v any) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s: %v", filepath.Base(path), err)
	}
}

func checkPNG(tb testing.TB, path string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Error(err)
		return
	}
	if !strings.HasPrefix(string(b), "\x89PNG\r\n\x1a\n") || len(b) < 1000 {
		tb.Errorf("%s: %d bytes, not a PNG image", filepath.Base(path), len(b))
	}
}
