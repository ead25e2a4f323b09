package backtest

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// WriteJSON writes rep as indented JSON (see Report).
func WriteJSON(w io.Writer, rep *Report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// Summary is one model's mean scores over the zones it was tested on.
type Summary struct {
	Model     string
	Zones     int
	MeanD1    float64 // mean over zones of MAPE lead day 1
	PersistD1 float64 // persistence's mean day-1 MAPE over the same zones
	Beats     int     // zones where the model's day-1 MAPE is below persistence's
	// MeanD is the mean over the same zones of MAPE per lead day
	// (MeanD[0] == MeanD1).
	MeanD [LeadDays]float64
	// BeatsAll counts the zones where the model's MAPE is below
	// persistence's on every lead day.
	BeatsAll int
	// Interval is set when the model gave intervals on every zone counted;
	// Coverage and Width are then their means over those zones.
	Interval        bool
	Coverage, Width float64
}

// HasIntervals reports whether any model of the report gave intervals.
func (r *Report) HasIntervals() bool {
	for _, ms := range r.Zones {
		for _, m := range ms {
			if m.Interval {
				return true
			}
		}
	}
	return false
}

// Ratio returns MeanD1 / PersistD1.
func (s Summary) Ratio() float64 { return s.MeanD1 / s.PersistD1 }

// ZoneIDs returns the report's zones, sorted.
func (r *Report) ZoneIDs() []forecast.Zone {
	zs := make([]forecast.Zone, 0, len(r.Zones))
	for z := range r.Zones {
		zs = append(zs, z)
	}
	slices.Sort(zs)
	return zs
}

// Models returns the model names of the report, in candidate order.
func (r *Report) Models() []string {
	var names []string
	for _, z := range r.ZoneIDs() {
		for _, n := range r.Order[z] {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// Summaries returns one Summary per model, in candidate order. Zones
// without a persistence row, or with no scored day, are left out.
func (r *Report) Summaries() []Summary {
	var out []Summary
	for _, name := range r.Models() {
		s := Summary{Model: name, Interval: true}
		var sum, psum float64
		for _, z := range r.ZoneIDs() {
			m, ok := r.Zones[z][name]
			p, pok := r.Zones[z][Persistence]
			if !ok || !pok || math.IsNaN(m.MAPE[0]) || math.IsNaN(p.MAPE[0]) {
				continue
			}
			s.Zones++
			sum += m.MAPE[0]
			psum += p.MAPE[0]
			if m.MAPE[0] < p.MAPE[0] {
				s.Beats++
			}
			all := true
			for d := range LeadDays {
				s.MeanD[d] += m.MAPE[d]
				all = all && m.MAPE[d] < p.MAPE[d]
			}
			if all {
				s.BeatsAll++
			}
			s.Interval = s.Interval && m.Interval
			s.Coverage += m.Coverage
			s.Width += m.Width
		}
		if s.Zones == 0 {
			continue
		}
		n := float64(s.Zones)
		s.MeanD1, s.PersistD1 = sum/n, psum/n
		for d := range LeadDays {
			s.MeanD[d] /= n
		}
		s.Coverage, s.Width = s.Coverage/n, s.Width/n
		if !s.Interval {
			s.Coverage, s.Width = 0, 0
		}
		out = append(out, s)
	}
	return out
}

// Counts returns the issue days scored and skipped, summed over zones.
func (r *Report) Counts() (scored, skipped int) {
	for _, n := range r.Issued {
		scored += n
	}
	for _, n := range r.Skip {
		skipped += n
	}
	return scored, skipped
}

// WriteTable writes rep as an aligned text table: one row per zone and
// model (MAPE % per lead day, median and p90 of the daily day-1 MAPEs, and
// day-1 MAPE relative to persistence), then one summary row per model with
// the mean day-1 MAPE over zones and its ratio to persistence's.
func WriteTable(w io.Writer, rep *Report) error {
	header := []string{"zone", "model", "mape_d1", "mape_d2", "mape_d3", "mape_d4", "median_d1", "p90_d1"}
	intervals := rep.HasIntervals()
	if intervals {
		header = append(header, "coverage", "width")
	}
	header = append(header, "d1/persistence")
	rows := [][]string{header}
	num := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "-"
		}
		return fmt.Sprintf("%.2f", x)
	}
	for _, z := range rep.ZoneIDs() {
		ms := rep.Zones[z]
		p := ms[Persistence]
		for _, name := range rep.Order[z] {
			m := ms[name]
			row := []string{string(z), name, num(m.MAPE[0]), num(m.MAPE[1]), num(m.MAPE[2]), num(m.MAPE[3]), num(m.MedianD1), num(m.P90D1)}
			if intervals {
				cov, width := "-", "-"
				if m.Interval {
					cov, width = fmt.Sprintf("%.1f", m.Coverage), fmt.Sprintf("%.1f", m.Width)
				}
				row = append(row, cov, width)
			}
			rows = append(rows, append(row, fmt.Sprintf("%.3f", m.MAPE[0]/p.MAPE[0])))
		}
	}
	rows = append(rows, nil)
	for _, s := range rep.Summaries() {
		row := []string{"mean", s.Model, num(s.MeanD1), num(s.MeanD[1]), num(s.MeanD[2]), num(s.MeanD[3]), "", ""}
		if intervals {
			cov, width := "", ""
			if s.Interval {
				cov, width = fmt.Sprintf("%.1f", s.Coverage), fmt.Sprintf("%.1f", s.Width)
			}
			row = append(row, cov, width)
		}
		rows = append(rows, append(row, fmt.Sprintf("%.3f (better in %d/%d zones)", s.Ratio(), s.Beats, s.Zones)))
	}
	width := make([]int, len(header))
	for _, r := range rows {
		for i, c := range r {
			if i < len(r)-1 {
				width[i] = max(width[i], len([]rune(c)))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "signal %s, issue days %s to %s at 00:00 UTC, MAPE %% per lead day\n", rep.Signal, rep.From, rep.To)
	for _, r := range rows {
		if r == nil {
			b.WriteString("\n")
			continue
		}
		for i, c := range r {
			pad := width[i] - len([]rune(c))
			switch {
			case i == len(r)-1:
				b.WriteString(c)
			case i < 2:
				b.WriteString(c + strings.Repeat(" ", pad+2))
			default:
				b.WriteString(strings.Repeat(" ", pad) + c + "  ")
			}
		}
		b.WriteString(strings.TrimRight("", " ") + "\n")
	}
	scored, skipped := rep.Counts()
	fmt.Fprintf(&b, "\n%d issue days scored, %d skipped (96 h of actuals or the history before them not available)\n", scored, skipped)
	_, err := io.WriteString(w, b.String())
	return err
}
