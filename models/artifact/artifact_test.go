package artifact_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/models/artifact"
	"github.com/carbongate/carbongate/models/baseline"
	"github.com/carbongate/carbongate/models/ridge"
)

var t0 = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

func series(days int) forecast.Series {
	v := make([]float64, days*24)
	for i := range v {
		v[i] = 300 + 80*math.Sin(2*math.Pi*float64(i)/24) + 7*math.Cos(float64(i)*0.37)
	}
	return forecast.Series{Start: t0, Values: v}
}

func fitted(tb testing.TB) *ridge.Model {
	tb.Helper()
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: "carbon-forecaster-DE", Zone: "DE", Signal: forecast.SignalDirect,
		Until: t0.Add(30 * 24 * time.Hour), Config: ridge.DefaultConfig()}, []ridge.Input{{Zone: "DE", Series: series(40)}})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func TestRoundTripBitIdentical(t *testing.T) {
	t.Parallel()
	p, _ := baseline.NewPersistence("DE", forecast.SignalDirect, 168, 96)
	sn, _ := baseline.NewSeasonalNaive("", forecast.SignalLifecycle, 24, 168, 96)
	s := series(40)
	for _, m := range []models.Model{fitted(t), p, sn} {
		t.Run(m.Meta().Family, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "model")
			if err := artifact.Save(dir, m); err != nil {
				t.Fatal(err)
			}
			got, err := artifact.Load(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.Meta() != m.Meta() {
				t.Fatalf("Meta=%+v, want %+v", got.Meta(), m.Meta())
			}
			if tr, ok := m.(models.Trained); ok {
				a, b := tr.Training(), got.(models.Trained).Training()
				if !a.From.Equal(b.From) || !a.Until.Equal(b.Until) || a.Samples != b.Samples || !slices.Equal(a.Zones, b.Zones) {
					t.Fatalf("Training=%+v, want %+v", b, a)
				}
			}
			want, out := make([]float64, 96), make([]float64, 96)
			for h := 168; h+96 <= s.Len(); h += 13 {
				start := s.Start.Add(time.Duration(h) * time.Hour)
				hist, _ := s.Last(start, 168)
				if err := m.Predict(hist, start, want); err != nil {
					t.Fatal(err)
				}
				if err := got.Predict(hist, start, out); err != nil {
					t.Fatal(err)
				}
				for i := range out {
					if math.Float64bits(out[i]) != math.Float64bits(want[i]) {
						t.Fatalf("issue hour %d lead %d: loaded model predicts %v, original %v", h, i, out[i], want[i])
					}
				}
			}
			// Saving again replaces the directory atomically.
			if err := artifact.Save(dir, m); err != nil {
				t.Fatalf("second Save: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Dir(dir))
			if len(entries) != 1 {
				t.Fatalf("parent holds %d entries after re-save, want 1 (no temp dirs left)", len(entries))
			}
		})
	}
}

func TestLoadRejectsMalformed(t *testing.T) {
	t.Parallel()
	m := fitted(t)
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		code   string
		msg    string
	}{
		{"missing MLmodel", func(t *testing.T, dir string) { rm(t, dir, artifact.MLmodelFile) }, forecast.EINVALID, "no MLmodel file"},
		{"foreign flavor only", func(t *testing.T, dir string) {
			write(t, dir, artifact.MLmodelFile, "flavors:\n  python_function:\n    loader_module: x\n")
		}, forecast.EINVALID, "no carbongate flavor"},
		{"not YAML", func(t *testing.T, dir string) { write(t, dir, artifact.MLmodelFile, "flavors: [\n") }, forecast.EINVALID, "not valid YAML"},
		{"unknown family", func(t *testing.T, dir string) { edit(t, dir, "family: ridge", "family: lstm") }, forecast.EINVALID, `unknown model family "lstm"`},
		{"format version", func(t *testing.T, dir string) { edit(t, dir, "format_version: 2", "format_version: 9") }, forecast.EINVALID, "format version 9"},
		{"weights missing", func(t *testing.T, dir string) { rm(t, dir, artifact.WeightsFile) }, forecast.EINVALID, "data file weights.bin is missing"},
		{"weights truncated", func(t *testing.T, dir string) { truncate(t, dir, 8) }, forecast.EINVALID, "flavor declares"},
		{"weights ragged", func(t *testing.T, dir string) { truncate(t, dir, 3) }, forecast.EINVALID, "not a whole number"},
		{"wrong weight count for params", func(t *testing.T, dir string) { edit(t, dir, "origins: 24", "origins: 1") }, forecast.EINVALID, "ridge needs"},
		{"corrupt weights", func(t *testing.T, dir string) { flipByte(t, dir) }, forecast.EINVALID, "data_sha256"},
		{"signature disagrees", func(t *testing.T, dir string) { edit(t, dir, "[-1,168]", "[-1,24]") }, forecast.EINVALID, "signature"},
		{"data path escapes", func(t *testing.T, dir string) { edit(t, dir, "data: weights.bin", "data: ../weights.bin") }, forecast.EINVALID, "plain file name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "m")
			if err := artifact.Save(dir, m); err != nil {
				t.Fatal(err)
			}
			tt.break_(t, dir)
			_, err := artifact.Load(dir)
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tt.code)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("error %q does not say %q", err, tt.msg)
			}
		})
	}
	if _, err := artifact.Load(filepath.Join(t.TempDir(), "absent")); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("absent dir: err=%v, want ENOTFOUND", err)
	}
}

// TestIntervalRoundTrip: a ridge model with an interval saves its level
// and the lower/upper outputs in the signature and loads as a
// models.IntervalModel that gives bit-identical intervals.
func TestIntervalRoundTrip(t *testing.T) {
	t.Parallel()
	m := fitted(t)
	want, ok := m.Serving().(models.IntervalModel)
	if !ok {
		t.Fatal("the default ridge model has no interval")
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := artifact.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(dir, artifact.MLmodelFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"interval_level: 0.8", `"name":"lower"`, `"name":"upper"`, "format_version: 2"} {
		if !strings.Contains(string(text), s) {
			t.Fatalf("MLmodel does not hold %s:\n%s", s, text)
		}
	}
	loaded, err := artifact.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := loaded.(models.IntervalModel)
	if !ok {
		t.Fatalf("loaded %T, want a models.IntervalModel", loaded)
	}
	s := series(40)
	start := t0.Add(33 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	var a, b [3][96]float64
	if err := want.PredictInterval(hist, start, a[0][:], a[1][:], a[2][:]); err != nil {
		t.Fatal(err)
	}
	if err := got.PredictInterval(hist, start, b[0][:], b[1][:], b[2][:]); err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("loaded model's interval differs from the original's")
	}
	for h := range 96 {
		if !(a[1][h] <= a[2][h]) || a[1][h] <= 0 {
			t.Fatalf("lead %d: interval [%v, %v] around %v", h, a[1][h], a[2][h], a[0][h])
		}
	}
}

// TestLoadsFormatVersion1 loads a point model as format version 1 wrote
// it (no interval, no parameters of version 2).
func TestLoadsFormatVersion1(t *testing.T) {
	t.Parallel()
	c := ridge.DefaultConfig()
	c.Folds, c.LambdaGrid, c.Interval = 0, nil, 0
	m, err := ridge.Fit(context.Background(), ridge.Spec{Name: "carbon-forecaster-DE", Zone: "DE", Signal: forecast.SignalDirect,
		Until: t0.Add(30 * 24 * time.Hour), Config: c}, []ridge.Input{{Zone: "DE", Series: series(40)}})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	if err := artifact.Save(dir, m); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"folds", "interval", "lead_lambdas", "lower"} {
		b, _ := os.ReadFile(filepath.Join(dir, artifact.MLmodelFile))
		if strings.Contains(string(b), s) {
			t.Fatalf("a point model's MLmodel mentions %s:\n%s", s, b)
		}
	}
	edit(t, dir, "format_version: 2", "format_version: 1")
	loaded, err := artifact.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := loaded.(models.IntervalModel); ok {
		t.Fatal("a version-1 point model loads as an interval model")
	}
	s := series(40)
	start := t0.Add(33 * 24 * time.Hour)
	hist, _ := s.Last(start, 168)
	a, b := make([]float64, 96), make([]float64, 96)
	if err := m.Predict(hist, start, a); err != nil {
		t.Fatal(err)
	}
	if err := loaded.Predict(hist, start, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatal("loaded version-1 model predicts differently")
	}
}

func TestSaveUnknownFamily(t *testing.T) {
	t.Parallel()
	reg := artifact.NewRegistry(nil, artifact.Persistence())
	err := reg.Save(filepath.Join(t.TempDir(), "m"), fitted(t))
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q (%v), want %q", got, err, want)
	}
}

func rm(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func edit(t *testing.T, dir, old, new string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, artifact.MLmodelFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("MLmodel has no %q:\n%s", old, b)
	}
	write(t, dir, artifact.MLmodelFile, strings.Replace(string(b), old, new, 1))
}

func truncate(t *testing.T, dir string, by int64) {
	t.Helper()
	p := filepath.Join(dir, artifact.WeightsFile)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, st.Size()-by); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, artifact.WeightsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	write(t, dir, artifact.WeightsFile, string(b))
}
