package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"
	"time"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/evaluate"
)

// Week draws the observations of one zone and signal and, per trace, the
// stitched day-1 forecast (evaluate.Week) with its prediction interval as a
// shaded band when the trace has one. Every trace must share the zone,
// signal and start of the first; ENOTFOUND when traces is empty.
func Week(w io.Writer, traces []evaluate.Trace, size Size) error {
	if len(traces) == 0 {
		return forecast.Errorf(forecast.ENOTFOUND, "no forecast covers the week to plot")
	}
	t0 := traces[0]
	for _, t := range traces[1:] {
		if t.Zone != t0.Zone || t.Signal != t0.Signal || !t.Start.Equal(t0.Start) {
			return forecast.Errorf(forecast.EINVALID, "week plot mixes %s/%s from %s with %s/%s from %s",
				t0.Zone, t0.Signal, t0.Start.Format(time.RFC3339), t.Zone, t.Signal, t.Start.Format(time.RFC3339))
		}
	}
	p := newPlot(fmt.Sprintf("%s %s: day-ahead forecast vs observed, week of %s", t0.Zone, t0.Signal, t0.Start.Format(time.DateOnly)),
		"UTC", "gCO2eq/kWh")
	p.X.Tick.Marker = gplot.TimeTicks{Format: "Mon 02 Jan"}
	x := make([]float64, len(t0.Value))
	for i := range x {
		x[i] = float64(t0.Start.Add(time.Duration(i) * forecast.Hour).Unix())
	}
	for i, t := range traces {
		if err := addBand(p, x, t.Lower, t.Upper, palette(i)); err != nil {
			return err
		}
	}
	if _, err := addLine(p, "observed", x, t0.Observed, color.Black, vg.Points(1.5), false); err != nil {
		return err
	}
	for i, t := range traces {
		name := modelLabel(t.ModelName, t.ModelVersion)
		if t.HasInterval() {
			name += " (band: interval)"
		}
		if _, err := addLine(p, name, x, t.Value, palette(i), vg.Points(1.2), true); err != nil {
			return err
		}
	}
	headroom(p)
	return writePNG(w, p, size)
}

// addBand shades lower..upper (light c) where both are finite.
func addBand(p *gplot.Plot, x, lower, upper []float64, c color.Color) error {
	both := make([]float64, len(x))
	for i := range x {
		both[i] = math.NaN()
		if i < len(lower) && i < len(upper) && !math.IsNaN(lower[i]) && !math.IsNaN(upper[i]) {
			both[i] = 0
		}
	}
	for _, seg := range segments(x, both) {
		ring := make(plotter.XYs, 0, 2*len(seg))
		for _, pt := range seg {
			i := indexOf(x, pt.X)
			ring = append(ring, plotter.XY{X: pt.X, Y: upper[i]})
		}
		for j := len(seg) - 1; j >= 0; j-- {
			i := indexOf(x, seg[j].X)
			ring = append(ring, plotter.XY{X: seg[j].X, Y: lower[i]})
		}
		poly, err := plotter.NewPolygon(ring)
		if err != nil {
			return fmt.Errorf("plot interval: %w", err)
		}
		r, g, b, _ := c.RGBA()
		poly.Color = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 60}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	return nil
}

// indexOf returns the index of v in the increasing, evenly spaced x.
func indexOf(x []float64, v float64) int {
	if len(x) < 2 {
		return 0
	}
	return int(math.Round((v - x[0]) / (x[1] - x[0])))
}

// LeadHours draws the MAPE of each lead hour, one line per result of rep
// (named zone/model/version when rep holds several zones), under title.
// ENOTFOUND when nothing was scored.
func LeadHours(w io.Writer, rep *evaluate.Report, title string, size Size) error {
	p := newPlot(title, "lead hour", "MAPE %")
	n, zones := 0, manyZones(rep)
	for _, r := range rep.Results {
		x := make([]float64, len(r.ByLeadHour))
		for h := range x {
			x[h] = float64(h)
		}
		ok, err := addLine(p, label(r, zones), x, r.ByLeadHour, palette(n), vg.Points(1.5), false)
		if err != nil {
			return err
		}
		if ok {
			n++
		}
	}
	if n == 0 {
		return forecast.Errorf(forecast.ENOTFOUND, "no scored forecast to plot")
	}
	var ticks []gplot.Tick
	for h := 0; h <= rep.LeadDays*forecast.HoursPerDay; h += 6 {
		t := gplot.Tick{Value: float64(h)}
		if h%forecast.HoursPerDay == 0 {
			t.Label = fmt.Sprint(h)
		}
		ticks = append(ticks, t)
	}
	p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	p.Y.Min = 0
	headroom(p)
	return writePNG(w, p, size)
}

// Comparison draws grouped bars of the mean MAPE per lead day (mape_d1 …):
// one group per lead day, one bar per scored result of rep, under title.
// ENOTFOUND when nothing was scored.
func Comparison(w io.Writer, rep *evaluate.Report, title string, size Size) error {
	p := newPlot(title, "lead day", "MAPE %")
	var rs []evaluate.Result
	for _, r := range rep.Results {
		if r.Scored > 0 {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return forecast.Errorf(forecast.ENOTFOUND, "no scored forecast to plot")
	}
	// Bars fill 70 % of each lead day's slot (pixels at 96 dpi are 0.75 pt).
	slot := float64(size.Width-100) / float64(max(1, rep.LeadDays))
	bw := vg.Length(math.Max(2, 0.7*slot/float64(len(rs))) * 0.75)
	zones := manyZones(rep)
	for i, r := range rs {
		vs := make(plotter.Values, len(r.Days))
		for d, day := range r.Days {
			vs[d] = day.MAPE.Mean
			if math.IsNaN(vs[d]) {
				vs[d] = 0 // no bar: nothing scored on this lead day
			}
		}
		b, err := plotter.NewBarChart(vs, bw)
		if err != nil {
			return fmt.Errorf("plot bars: %w", err)
		}
		b.Color = palette(i)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(float64(i)-float64(len(rs)-1)/2) * bw
		p.Add(b)
		p.Legend.Add(label(r, zones), b)
	}
	names := make([]string, rep.LeadDays)
	for d := range names {
		names[d] = fmt.Sprintf("mape_d%d", d+1)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(rep.LeadDays)-0.5
	p.Y.Min = 0
	headroom(p)
	return writePNG(w, p, size)
}

func manyZones(rep *evaluate.Report) bool {
	for _, r := range rep.Results {
		if r.Zone != rep.Results[0].Zone {
			return true
		}
	}
	return false
}

// modelLabel is "name v3" for a numbered version, "name (version)"
// otherwise.
func modelLabel(name, version string) string {
	if version != "" && strings.Trim(version, "0123456789") == "" {
		return name + " v" + version
	}
	return name + " (" + version + ")"
}

func label(r evaluate.Result, withZone bool) string {
	s := modelLabel(r.ModelName, r.ModelVersion)
	if withZone {
		s = string(r.Zone) + " " + s
	}
	return s
}
