package plot_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/models/decisions"
	"github.com/carbongate/carbongate/models/evaluate"
	"github.com/carbongate/carbongate/models/evaluate/plot"
)

var day0 = time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)

// fixture scores two versions of a DE model over ten daily 96-hour
// issues: version 1 has a ±15 % interval and a 5 % error growing with the
// lead hour, version 2 a flat 12 % error.
func fixture(t *testing.T) (*evaluate.Report, []evaluate.Trace) {
	t.Helper()
	ctx := context.Background()
	m := store.NewMemory()
	obsAt := func(at time.Time) float64 { return 300 + 120*math.Sin(2*math.Pi*float64(at.Hour())/24) }
	obs := make([]store.Observation, 20*24)
	for i := range obs {
		at := day0.Add(time.Duration(i) * time.Hour)
		obs[i] = store.Observation{Time: at, Value: obsAt(at)}
	}
	if err := m.UpsertObserved(ctx, "DE", forecast.SignalDirect, obs); err != nil {
		t.Fatal(err)
	}
	var rows []store.ForecastRow
	for d := range 10 {
		issued := day0.AddDate(0, 0, d)
		for h := range 96 {
			at := issued.Add(time.Duration(h) * time.Hour)
			v1 := obsAt(at) * (1.05 + 0.002*float64(h))
			rows = append(rows,
				store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect, ModelName: "carbon-forecaster-DE", ModelVersion: "1",
					IssuedAt: issued, TargetTime: at, Value: v1, Lower: v1 * 0.85, Upper: v1 * 1.15},
				store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect, ModelName: "carbon-forecaster-DE", ModelVersion: "2",
					IssuedAt: issued, TargetTime: at, Value: obsAt(at) * 0.88, Lower: math.NaN(), Upper: math.NaN()})
		}
	}
	if err := m.WriteForecasts(ctx, "plot", nil, rows); err != nil {
		t.Fatal(err)
	}
	set, err := evaluate.Load(ctx, m, evaluate.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluate.Score(ctx, set, m)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := evaluate.Week(ctx, set, m, "DE", day0.AddDate(0, 0, 1), 7)
	if err != nil {
		t.Fatal(err)
	}
	return rep, tr
}

// decode checks that b is a PNG of size and returns it.
func decode(t *testing.T, b []byte, size plot.Size) image.Image {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if got := img.Bounds().Size(); got.X != size.Width || got.Y != size.Height {
		t.Fatalf("image %v, want %dx%d", got, size.Width, size.Height)
	}
	return img
}

// hasColor counts the pixels within 10 of c on every channel.
func hasColor(img image.Image, c color.Color) int {
	cr, cg, cb, _ := c.RGBA()
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if absDiff(r, cr) < 10<<8 && absDiff(g, cg) < 10<<8 && absDiff(bl, cb) < 10<<8 {
				n++
			}
		}
	}
	return n
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// distinctColumns counts the pixel columns that differ from the first.
func distinctColumns(img image.Image) int {
	b := img.Bounds()
	n := 0
	for x := b.Min.X + 1; x < b.Max.X; x++ {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			if img.At(x, y) != img.At(b.Min.X, y) {
				n++
				break
			}
		}
	}
	return n
}

var (
	blue   = color.RGBA{0, 114, 178, 255} // palette(0)
	orange = color.RGBA{213, 94, 0, 255}  // palette(1)
)

func TestCharts(t *testing.T) {
	t.Parallel()
	rep, traces := fixture(t)
	for _, c := range []struct {
		note   string
		size   plot.Size
		draw   func(*bytes.Buffer, plot.Size) error
		colors []color.Color // series colours that must show
	}{
		{"week with interval band", plot.Size{900, 450}, func(b *bytes.Buffer, s plot.Size) error { return plot.Week(b, traces, s) },
			[]color.Color{blue, orange, color.Black}},
		{"lead hours", plot.Size{640, 480}, func(b *bytes.Buffer, s plot.Size) error {
			return plot.LeadHours(b, rep, "DE: MAPE by lead hour", s)
		}, []color.Color{blue, orange}},
		{"comparison bars", plot.DefaultSize, func(b *bytes.Buffer, s plot.Size) error {
			return plot.Comparison(b, rep, "DE: MAPE per lead day", s)
		}, []color.Color{blue, orange}},
	} {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			var a, b bytes.Buffer
			if err := c.draw(&a, c.size); err != nil {
				t.Fatal(err)
			}
			img := decode(t, a.Bytes(), c.size)
			if n := distinctColumns(img); n < c.size.Width/2 {
				t.Errorf("only %d of %d pixel columns differ from the first: blank image?", n, c.size.Width)
			}
			for _, col := range c.colors {
				if n := hasColor(img, col); n < 20 {
					t.Errorf("colour %v: %d pixels, want a drawn series", col, n)
				}
			}
			if err := c.draw(&b, c.size); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("second rendering differs (%v)", err)
			}
		})
	}
}

func TestChartErrors(t *testing.T) {
	t.Parallel()
	rep, traces := fixture(t)
	var b bytes.Buffer
	empty := &evaluate.Report{LeadDays: 4}
	mixed := append([]evaluate.Trace{}, traces...)
	other := traces[0]
	other.Zone = "FR"
	mixed = append(mixed, other)
	for _, c := range []struct {
		note string
		err  error
		code string
	}{
		{"too small", plot.Comparison(&b, rep, "x", plot.Size{50, 400}), forecast.EINVALID},
		{"too large", plot.LeadHours(&b, rep, "x", plot.Size{400, 9000}), forecast.EINVALID},
		{"no traces", plot.Week(&b, nil, plot.DefaultSize), forecast.ENOTFOUND},
		{"mixed zones", plot.Week(&b, mixed, plot.DefaultSize), forecast.EINVALID},
		{"nothing scored (bars)", plot.Comparison(&b, empty, "x", plot.DefaultSize), forecast.ENOTFOUND},
		{"nothing scored (lines)", plot.LeadHours(&b, empty, "x", plot.DefaultSize), forecast.ENOTFOUND},
	} {
		if got := forecast.ErrorCode(c.err); got != c.code {
			t.Errorf("%s: %v, want %s", c.note, c.err, c.code)
		}
	}
}

func TestWriteDir(t *testing.T) {
	t.Parallel()
	rep, traces := fixture(t)
	dir := filepath.Join(t.TempDir(), "plots")
	size := plot.Size{400, 300}
	paths, err := plot.WriteDir(dir, rep, traces, size)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"comparison-DE-direct.png", "lead-hours-DE-direct.png", "week-DE-direct-2021-03-02.png"}
	if len(paths) != len(want) {
		t.Fatalf("wrote %q, want %q", paths, want)
	}
	for i, p := range paths {
		if filepath.Base(p) != want[i] {
			t.Errorf("file %d is %s, want %s", i, filepath.Base(p), want[i])
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, b, size)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}
}

// TestWriteCapture: one PNG per job shape of a decision report, the size
// asked, and ENOTFOUND for a shape the report lacks.
func TestWriteCapture(t *testing.T) {
	t.Parallel()
	sh, err := decisions.ParseShapes("1h/12h,3h/24h")
	if err != nil {
		t.Fatal(err)
	}
	out := func(c float64) []decisions.Outcome {
		return []decisions.Outcome{{Source: "carbongate", Capture: c}, {Source: "seasonal-naive", Capture: c / 2}}
	}
	rep := &decisions.Report{Sources: []string{"carbongate", "seasonal-naive"}}
	for i, s := range sh {
		for _, z := range []string{"DE", "SE"} {
			rep.Rows = append(rep.Rows, decisions.Row{Shape: s, Zone: z, Issues: 4, Sources: out(0.5 + 0.1*float64(i))})
		}
		rep.Shapes = append(rep.Shapes, decisions.Summary{Shape: s, Issues: 8, Sources: out(0.6)})
	}
	rep.Rows[0].Sources[0].Capture = math.NaN() // the oracle saved nothing: no bar
	dir := t.TempDir()
	paths, err := plot.WriteCapture(dir, rep, plot.Size{Width: 640, Height: 360})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "capture-1h-12h.png" || filepath.Base(paths[1]) != "capture-3h-24h.png" {
		t.Fatalf("paths %v", paths)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(f)
		f.Close()
		if err != nil || cfg.Width != 640 || cfg.Height != 360 {
			t.Fatalf("%s: %+v %v, want a 640x360 PNG", p, cfg, err)
		}
	}
	if err := plot.Capture(io.Discard, rep, "8h/48h", plot.Size{Width: 640, Height: 360}); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("absent shape: %v, want ENOTFOUND", err)
	}
}
