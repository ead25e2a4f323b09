package plot

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/decisions"
)

// Capture draws, for one job shape of rep, grouped bars of the share of
// the oracle's saving each source captured: one group per zone and one
// for the shape pooled over its zones ("all"), one bar per source.
// ENOTFOUND when rep has no row of the shape.
func Capture(w io.Writer, rep *decisions.Report, shape string, size Size) error {
	var rows []decisions.Row
	for _, r := range rep.Rows {
		if r.Shape.String() == shape {
			rows = append(rows, r)
		}
	}
	var pooled *decisions.Summary
	for i := range rep.Shapes {
		if rep.Shapes[i].Shape.String() == shape {
			pooled = &rep.Shapes[i]
		}
	}
	if len(rows) == 0 || pooled == nil {
		return forecast.Errorf(forecast.ENOTFOUND, "no decision of shape %s to plot", shape)
	}
	p := newPlot(fmt.Sprintf("Share of the perfect forecast's saving captured, job %s", shape), "zone", "capture")
	names := make([]string, 0, len(rows)+1)
	for _, r := range rows {
		names = append(names, r.Zone)
	}
	names = append(names, "all")
	slot := float64(size.Width-100) / float64(len(names))
	bw := vg.Length(math.Max(2, 0.7*slot/float64(max(1, len(rep.Sources)))) * 0.75)
	for i, src := range rep.Sources {
		vs := make(plotter.Values, len(names))
		for j, r := range rows {
			vs[j] = finiteOr0(r.Sources[i].Capture)
		}
		vs[len(rows)] = finiteOr0(pooled.Sources[i].Capture)
		b, err := plotter.NewBarChart(vs, bw)
		if err != nil {
			return fmt.Errorf("plot bars: %w", err)
		}
		b.Color = palette(i)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(rep.Sources)-1)/2) * bw
		p.Add(b)
		p.Legend.Add(src, b)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min, p.Y.Max = math.Min(0, p.Y.Min), 1
	return writePNG(w, p, size)
}

// finiteOr0 is v, or 0 (no bar) when NaN: the oracle saved nothing.
func finiteOr0(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// WriteCapture writes capture-<duration>-<slack>.png per shape of rep into
// dir (created when absent), each whole (temporary name, then rename), and
// returns the paths written.
func WriteCapture(dir string, rep *decisions.Report, size Size) ([]string, error) {
	if err := size.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, s := range rep.Shapes {
		var b bytes.Buffer
		if err := Capture(&b, rep, s.Shape.String(), size); err != nil {
			return paths, err
		}
		name := "capture-" + strings.NewReplacer("/", "-", "@", "-", "+", "-").Replace(s.Shape.String()) + ".png"
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path+".tmp", b.Bytes(), 0o644); err != nil {
			return paths, err
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
