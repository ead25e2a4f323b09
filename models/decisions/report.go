package decisions

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Outcome is what one source's picks realized over a row's issues, against
// running each job at its issue time.
type Outcome struct {
	Source string `json:"source"`
	// Saving is the mean realized saving per issue: run-now minus picked
	// observed mean intensity, in the signal's unit (gCO2eq/kWh).
	Saving float64 `json:"saving"`
	// SavingPct is Saving in percent of the mean run-now intensity.
	SavingPct float64 `json:"saving_pct"`
	// Capture is Saving over the oracle's saving: 1 for perfect picks, 0
	// for picks no better than running now, negative for worse; NaN when
	// the oracle saves nothing.
	Capture float64 `json:"capture"`
}

// Row is the replay of one shape in one zone (or the shape's own zone
// set, Zone then "Z1+Z2…").
type Row struct {
	Shape   Shape     `json:"shape"`
	Zone    string    `json:"zone"`
	Issues  int       `json:"issues"`  // issues scored
	Skipped int       `json:"skipped"` // issues skipped: an observation or a forecast missing
	RunNow  float64   `json:"run_now"` // mean observed intensity of running at the issue time
	Oracle  Outcome   `json:"oracle"`
	Sources []Outcome `json:"sources"` // in the order of Run's sources
}

// Summary pools one shape's rows: savings are per issue over every zone's
// issues, so the capture is Σ saving ÷ Σ oracle saving.
type Summary struct {
	Shape   Shape     `json:"shape"`
	Issues  int       `json:"issues"`
	Skipped int       `json:"skipped"`
	RunNow  float64   `json:"run_now"`
	Oracle  Outcome   `json:"oracle"`
	Sources []Outcome `json:"sources"`
}

// Report is the outcome of Run.
type Report struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Every   string    `json:"every"`
	Sources []string  `json:"sources"` // names, in order (without the oracle)
	Rows    []Row     `json:"rows"`    // per shape, then zone
	Shapes  []Summary `json:"shapes"`  // per shape, pooled over its rows
	// Capture is each source's mean over shapes of its pooled capture (the
	// shapes weigh alike); NaN when a shape has no oracle saving.
	Capture map[string]float64 `json:"capture"`
}

func report(cfg Config, rows []row, accs []accum, sources []Source) *Report {
	rep := &Report{From: cfg.From, To: cfg.To, Every: hours(cfg.Every), Capture: map[string]float64{}}
	for _, s := range sources {
		rep.Sources = append(rep.Sources, s.Name)
	}
	pooled := make([]accum, len(cfg.Shapes))
	for i := range pooled {
		pooled[i] = newAccum(len(sources))
	}
	for r, ro := range rows {
		pooled[ro.shapeIdx].merge(accs[r])
		o, out := outcomes(accs[r], sources)
		rep.Rows = append(rep.Rows, Row{Shape: ro.shape, Zone: zoneKey(ro.zones), Issues: accs[r].issues, Skipped: accs[r].skipped,
			RunNow: ratio(accs[r].now, float64(accs[r].issues)), Oracle: o, Sources: out})
	}
	for i, s := range cfg.Shapes {
		o, out := outcomes(pooled[i], sources)
		rep.Shapes = append(rep.Shapes, Summary{Shape: s, Issues: pooled[i].issues, Skipped: pooled[i].skipped,
			RunNow: ratio(pooled[i].now, float64(pooled[i].issues)), Oracle: o, Sources: out})
		for _, x := range out {
			rep.Capture[x.Source] += x.Capture / float64(len(cfg.Shapes))
		}
	}
	return rep
}

func outcomes(a accum, sources []Source) (Outcome, []Outcome) {
	n := float64(a.issues)
	oracle := ratio(a.now-a.oracle, n)
	one := func(name string, sum float64) Outcome {
		s := ratio(a.now-sum, n)
		return Outcome{Source: name, Saving: s, SavingPct: 100 * ratio(s, ratio(a.now, n)), Capture: ratio(s, oracle)}
	}
	out := make([]Outcome, len(sources))
	for i, s := range sources {
		out[i] = one(s.Name, a.picks[i])
	}
	return one(Oracle, a.oracle), out
}

// ratio is x/n, NaN when n is 0 or NaN.
func ratio(x, n float64) float64 {
	if n == 0 || math.IsNaN(n) {
		return math.NaN()
	}
	return x / n
}

// MarshalJSON writes NaN figures as null.
func (o Outcome) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Source    string   `json:"source"`
		Saving    *float64 `json:"saving"`
		SavingPct *float64 `json:"saving_pct"`
		Capture   *float64 `json:"capture"`
	}{o.Source, num(o.Saving), num(o.SavingPct), num(o.Capture)})
}

// MarshalJSON writes the durations as "3h" and the zones as ids.
func (s Shape) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name     string          `json:"name"`
		Duration string          `json:"duration"`
		Slack    string          `json:"slack"`
		Zones    []forecast.Zone `json:"zones,omitempty"`
	}{s.String(), hours(s.Duration), hours(s.Slack), s.Zones})
}

func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// WriteJSON writes rep as indented JSON; figures without data are null.
func WriteJSON(w io.Writer, rep *Report) error {
	caps := map[string]*float64{}
	for k, v := range rep.Capture {
		caps[k] = num(v)
	}
	type alias Report
	b, err := json.MarshalIndent(struct {
		*alias
		Capture map[string]*float64 `json:"capture"`
	}{(*alias)(rep), caps}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes one line per row, then the pooled shapes and the mean
// capture: the run-now intensity, the oracle's saving in percent, and per
// source its saving in percent and its capture.
func WriteTable(w io.Writer, rep *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"shape", "zone", "issues", "run-now", "oracle %"}
	for _, s := range rep.Sources {
		head = append(head, s+" %", "capture")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	line := func(shape, zone string, issues int, now float64, oracle Outcome, out []Outcome) {
		cells := []string{shape, zone, fmt.Sprint(issues), fixed(now, 1), fixed(oracle.SavingPct, 1)}
		for _, o := range out {
			cells = append(cells, fixed(o.SavingPct, 1), fixed(o.Capture, 2))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	for _, r := range rep.Rows {
		line(r.Shape.String(), r.Zone, r.Issues, r.RunNow, r.Oracle, r.Sources)
	}
	for _, s := range rep.Shapes {
		line(s.Shape.String(), "all", s.Issues, s.RunNow, s.Oracle, s.Sources)
	}
	cells := []string{"mean", "", "", "", ""}
	for _, s := range rep.Sources {
		cells = append(cells, "", fixed(rep.Capture[s], 2))
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	return tw.Flush()
}

func fixed(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, x)
}
