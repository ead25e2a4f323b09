// Package plot draws evaluation results as PNG images with gonum/plot:
// forecast against observations over a week (Week), error by lead hour
// (LeadHours) and a comparison of models per lead day (Comparison).
// Every function writes one PNG of exactly the requested size in pixels.
package plot

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/carbongate/carbongate/forecast"
)

// Size is an image size in pixels.
type Size struct {
	Width, Height int
}

// DefaultSize is the size carbonctl evaluate uses: 1200×600.
var DefaultSize = Size{1200, 600}

// check returns EINVALID unless s is between 100 and 8000 pixels a side.
func (s Size) check() error {
	if s.Width < 100 || s.Height < 100 || s.Width > 8000 || s.Height > 8000 {
		return forecast.FieldErrorf(forecast.EINVALID, "size", "plot size %dx%d is not between 100 and 8000 pixels a side", s.Width, s.Height)
	}
	return nil
}

// writePNG renders p at size into w.
func writePNG(w io.Writer, p *gplot.Plot, size Size) error {
	if err := size.check(); err != nil {
		return err
	}
	img := image.NewRGBA(image.Rect(0, 0, size.Width, size.Height))
	c := vgimg.NewWith(vgimg.UseImage(img))
	p.Draw(draw.New(c))
	return png.Encode(w, c.Image())
}

// palette is the colour of the i-th series (Okabe–Ito, colour-blind safe).
func palette(i int) color.Color {
	cs := []color.RGBA{
		{0, 114, 178, 255}, {213, 94, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
		{230, 159, 0, 255}, {86, 180, 233, 255}, {240, 228, 66, 255}, {0, 0, 0, 255},
	}
	return cs[i%len(cs)]
}

// segments splits the points (x[i], y[i]) at non-finite y into runs that
// gonum can draw (it rejects NaN).
func segments(x, y []float64) []plotter.XYs {
	var out []plotter.XYs
	var cur plotter.XYs
	for i := range y {
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, plotter.XY{X: x[i], Y: y[i]})
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// addLine draws y over x as one legend entry (several segments when y has
// gaps). It returns false when y has no finite point.
func addLine(p *gplot.Plot, name string, x, y []float64, c color.Color, width vg.Length, dashed bool) (bool, error) {
	segs := segments(x, y)
	for i, s := range segs {
		l, err := plotter.NewLine(s)
		if err != nil {
			return false, fmt.Errorf("plot %s: %w", name, err)
		}
		l.Color, l.Width = c, width
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if i == 0 {
			p.Legend.Add(name, l)
		}
	}
	return len(segs) > 0, nil
}

func newPlot(title, xLabel, yLabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// headroom raises the top of the y axis by a fifth of its range, so the
// legend (top right) does not cover the data.
func headroom(p *gplot.Plot) {
	p.Y.Max += (p.Y.Max - p.Y.Min) / 5
}
