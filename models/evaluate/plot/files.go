package plot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/evaluate"
)

// Group is the part of a report of one zone and signal.
type Group struct {
	Zone   forecast.Zone
	Signal forecast.Signal
	Report *evaluate.Report
}

// Groups splits rep by zone and signal, in report order.
func Groups(rep *evaluate.Report) []Group {
	var out []Group
	for _, r := range rep.Results {
		if n := len(out); n == 0 || out[n-1].Zone != r.Zone || out[n-1].Signal != r.Signal {
			out = append(out, Group{r.Zone, r.Signal, &evaluate.Report{LeadDays: rep.LeadDays}})
		}
		g := out[len(out)-1].Report
		g.Results = append(g.Results, r)
	}
	return out
}

// WriteDir writes into dir (created when absent), per zone and signal of
// rep with a scored result, comparison-<zone>-<signal>.png and
// lead-hours-<zone>-<signal>.png, and per zone and signal of traces
// week-<zone>-<signal>-<YYYY-MM-DD>.png. It returns the paths written, in
// that order. Files are written whole (temporary name, then rename).
func WriteDir(dir string, rep *evaluate.Report, traces []evaluate.Trace, size Size) ([]string, error) {
	if err := size.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	save := func(name string, draw func(b *bytes.Buffer) error) error {
		var b bytes.Buffer
		if err := draw(&b); err != nil {
			return err
		}
		path := filepath.Join(dir, name)
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		paths = append(paths, path)
		return nil
	}
	for _, g := range Groups(rep) {
		if !scored(g.Report) {
			continue
		}
		base := fmt.Sprintf("%s-%s", g.Zone, g.Signal)
		if err := save("comparison-"+base+".png", func(b *bytes.Buffer) error {
			return Comparison(b, g.Report, fmt.Sprintf("%s %s: MAPE per lead day", g.Zone, g.Signal), size)
		}); err != nil {
			return paths, err
		}
		if err := save("lead-hours-"+base+".png", func(b *bytes.Buffer) error {
			return LeadHours(b, g.Report, fmt.Sprintf("%s %s: MAPE by lead hour", g.Zone, g.Signal), size)
		}); err != nil {
			return paths, err
		}
	}
	for i := 0; i < len(traces); {
		j := i + 1
		for j < len(traces) && traces[j].Zone == traces[i].Zone && traces[j].Signal == traces[i].Signal {
			j++
		}
		t := traces[i]
		name := fmt.Sprintf("week-%s-%s-%s.png", t.Zone, t.Signal, t.Start.Format(time.DateOnly))
		if err := save(name, func(b *bytes.Buffer) error { return Week(b, traces[i:j], size) }); err != nil {
			return paths, err
		}
		i = j
	}
	return paths, nil
}

func scored(rep *evaluate.Report) bool {
	for _, r := range rep.Results {
		if r.Scored > 0 {
			return true
		}
	}
	return false
}
