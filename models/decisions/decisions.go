// Package decisions replays the scheduler's decisions on past data and
// charges them what the grid really emitted. For each job shape (a
// duration, a slack, optionally a set of zones) issued at regular times,
// each forecast source picks the window with the least mean forecast
// intensity (forecast.Search, as the gateway does), and the pick is charged
// the observed mean intensity of the hours it would have run. Against
// running the job at once, the oracle's pick (the search on the
// observations) saves the most any forecast can; the share of that saving
// a source realizes is its capture.
//
// Every source is scored on the same issues: an issue is skipped when an
// observation of its window is missing or a source has no forecast for it.
package decisions

import (
	"context"
	"slices"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// DefaultEvery is the step between issue times when Config.Every is zero.
const DefaultEvery = 6 * time.Hour

// Config says what to replay.
type Config struct {
	Shapes []Shape // required
	// Zones are those where the shapes without zones of their own are
	// replayed, each on its own; sorted by Run.
	Zones []forecast.Zone
	// Issue times are From, From+Every, … up to To inclusive; From is
	// hour-aligned.
	From, To time.Time
	Every    time.Duration // 0: DefaultEvery; a whole number of hours
	// Redecide, when > 0, re-decides each pick every Redecide after its
	// issue time while its start is still ahead, with the forecast issued
	// then (the earliest start moving up, the deadline kept), as a
	// controller re-asking at each new forecast would; a whole number of
	// hours. A re-decision without a forecast keeps the pick it has.
	Redecide time.Duration
	// RedecideGain, with Redecide, moves a pick only when the new window's
	// forecast mean is lower than the held window's, by the same forecast,
	// by more than this share (the controller's --redecide-gain); 0: any
	// better window moves it. In [0, 1).
	RedecideGain float64
}

// Run replays cfg against observed (each zone's observed hourly series,
// which must cover the issue windows, and for in-process sources the
// history before them) for every source. The oracle is added by Run; the
// sources are reported in the order given. EINVALID (field "shapes",
// "zones", "from", "every" or "sources") for a bad configuration; the
// errors of sources are returned as they come. ctx is checked at every
// issue time.
func Run(ctx context.Context, cfg Config, observed map[forecast.Zone]forecast.Series, sources []Source) (*Report, error) {
	cfg, err := check(cfg, observed, sources)
	if err != nil {
		return nil, err
	}
	rows := cfg.rows()
	accs := make([]accum, len(rows))
	for i := range accs {
		accs[i] = newAccum(len(sources))
	}
	hours := 0
	for _, s := range cfg.Shapes {
		hours = max(hours, int(s.Slack/time.Hour))
	}
	type key struct {
		src  int
		zone forecast.Zone
		at   int64
	}
	cache := map[key]issued{}
	fetch := func(src int, z forecast.Zone, at time.Time) (forecast.Series, bool, error) {
		k := key{src, z, at.Unix()}
		if got, ok := cache[k]; ok {
			return got.s, got.ok, nil
		}
		s, ok, err := sources[src].Forecasts.Issue(ctx, z, at, hours)
		cache[k] = issued{s, ok}
		return s, ok, err
	}
	for at := cfg.From; !at.After(cfg.To); at = at.Add(cfg.Every) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for k := range cache {
			if k.at < at.Unix() {
				delete(cache, k)
			}
		}
		for r, row := range rows {
			if err := replay(&accs[r], row, at, cfg, observed, len(sources), fetch); err != nil {
				return nil, err
			}
		}
	}
	return report(cfg, rows, accs, sources), nil
}

type issued struct {
	s  forecast.Series
	ok bool
}

// row is one (shape, zones) pair: a single zone, or the shape's own set.
type row struct {
	shape    Shape
	shapeIdx int // in Config.Shapes
	zones    []forecast.Zone
}

func (c Config) rows() []row {
	var out []row
	for i, s := range c.Shapes {
		if len(s.Zones) > 0 {
			out = append(out, row{s, i, s.Zones})
			continue
		}
		for _, z := range c.Zones {
			out = append(out, row{s, i, []forecast.Zone{z}})
		}
	}
	return out
}

func check(cfg Config, observed map[forecast.Zone]forecast.Series, sources []Source) (Config, error) {
	if len(cfg.Shapes) == 0 {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "shapes", "no shape given")
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Every < 0 || cfg.Every%time.Hour != 0 {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "every", "the step between issue times %v is not a positive whole number of hours", cfg.Every)
	}
	if cfg.Redecide < 0 || cfg.Redecide%time.Hour != 0 {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "redecide", "the step between re-decisions %v is not a whole number of hours", cfg.Redecide)
	}
	if !(cfg.RedecideGain >= 0 && cfg.RedecideGain < 1) {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "redecide_gain", "the least gain of a re-decision %v is not in [0, 1)", cfg.RedecideGain)
	}
	if cfg.From.IsZero() || !cfg.From.Equal(forecast.HourFloor(cfg.From)) || cfg.To.Before(cfg.From) {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "from", "issue times need an hour-aligned start (%s) no later than their end (%s)", cfg.From.Format(time.RFC3339), cfg.To.Format(time.RFC3339))
	}
	cfg.From, cfg.To = cfg.From.UTC(), cfg.To.UTC()
	cfg.Zones = slices.Clone(cfg.Zones)
	slices.Sort(cfg.Zones)
	cfg.Zones = slices.Compact(cfg.Zones)
	need := slices.Clone(cfg.Zones)
	perZone := false
	for _, s := range cfg.Shapes {
		if s.Duration <= 0 || s.Duration%time.Hour != 0 || s.Slack < s.Duration || s.Slack%time.Hour != 0 || s.Slack > MaxSlack {
			return cfg, forecast.FieldErrorf(forecast.EINVALID, "shapes", "shape %s: the duration must be whole hours, the slack whole hours from the duration to %v", s, MaxSlack)
		}
		need = append(need, s.Zones...)
		perZone = perZone || len(s.Zones) == 0
	}
	if perZone && len(cfg.Zones) == 0 {
		return cfg, forecast.FieldErrorf(forecast.EINVALID, "zones", "shapes without zones of their own need zones to replay them in")
	}
	for _, z := range need {
		if _, ok := observed[z]; !ok {
			return cfg, forecast.FieldErrorf(forecast.EINVALID, "zones", "zone %s has no observations", z)
		}
	}
	names := []string{Oracle}
	for _, s := range sources {
		if s.Name == "" || slices.Contains(names, s.Name) || s.Forecasts == nil {
			return cfg, forecast.FieldErrorf(forecast.EINVALID, "sources", "source %q: each source needs forecasts and a name of its own (not %s)", s.Name, Oracle)
		}
		names = append(names, s.Name)
	}
	return cfg, nil
}

// fetchFunc returns source src's forecast of zone issued at at.
type fetchFunc func(src int, zone forecast.Zone, at time.Time) (forecast.Series, bool, error)

// replay scores one row at one issue time into a.
func replay(a *accum, r row, at time.Time, cfg Config, observed map[forecast.Zone]forecast.Series, n int, fetch fetchFunc) error {
	q := forecast.Query{Duration: r.shape.Duration, EarliestStart: at, Deadline: at.Add(r.shape.Slack), Step: forecast.Hour}
	obs := make([]forecast.Candidate, len(r.zones))
	for i, z := range r.zones {
		w := observed[z].Window(at, q.Deadline)
		if !w.Start.Equal(at) || w.Len() != int(r.shape.Slack/time.Hour) || !allFinite(w.Values) {
			a.skipped++
			return nil
		}
		obs[i] = forecast.Candidate{Zone: z, Series: w}
	}
	picks := make([]float64, n)
	for src := range n {
		w, ok, err := pick(q, r.zones, src, fetch)
		if err != nil {
			return err
		}
		if !ok {
			a.skipped++
			return nil
		}
		for t := at.Add(cfg.Redecide); cfg.Redecide > 0 && t.Before(w.Start); t = t.Add(cfg.Redecide) {
			q.EarliestStart = t
			again, ok, err := pick(q, r.zones, src, fetch)
			if err != nil {
				return err
			}
			if ok {
				if w, err = moveIfGain(w, again, cfg.RedecideGain, src, t, fetch); err != nil {
					return err
				}
			}
		}
		q.EarliestStart = at
		if picks[src], err = observedMean(obs, w); err != nil {
			return err
		}
	}
	best, err := forecast.Search(q, obs)
	if err != nil {
		return err
	}
	now, err := forecast.MeanOver(obs[0].Series, at, q.Duration)
	if err != nil {
		return err
	}
	a.add(now, best.Best.Mean, picks)
	return nil
}

// pick is the window source src picks for q with the forecasts it issued
// at q.EarliestStart; false when it has none for a zone.
func pick(q forecast.Query, zones []forecast.Zone, src int, fetch fetchFunc) (forecast.Window, bool, error) {
	cands := make([]forecast.Candidate, len(zones))
	for i, z := range zones {
		s, ok, err := fetch(src, z, q.EarliestStart)
		if err != nil || !ok {
			return forecast.Window{}, false, err
		}
		cands[i] = forecast.Candidate{Zone: z, Series: s}
	}
	res, err := forecast.Search(q, cands)
	return res.Best, err == nil, err
}

// moveIfGain returns again when it beats the held window w by more than
// gain of w's mean, both by the forecast issued at t; else w. A held window
// the forecast at t does not cover is kept.
func moveIfGain(w, again forecast.Window, gain float64, src int, t time.Time, fetch fetchFunc) (forecast.Window, error) {
	if gain == 0 {
		return again, nil
	}
	s, ok, err := fetch(src, w.Zone, t)
	if err != nil || !ok {
		return w, err
	}
	held, err := forecast.MeanOver(s, w.Start, w.End.Sub(w.Start))
	if err != nil || !(held > 0) {
		return w, nil
	}
	if (held-again.Mean)/held > gain {
		return again, nil
	}
	return w, nil
}

// observedMean charges w the observed mean intensity of its zone.
func observedMean(obs []forecast.Candidate, w forecast.Window) (float64, error) {
	for _, c := range obs {
		if c.Zone == w.Zone {
			return forecast.MeanOver(c.Series, w.Start, w.End.Sub(w.Start))
		}
	}
	return 0, forecast.Errorf(forecast.EINTERNAL, "search picked zone %s, which is not a candidate", w.Zone)
}

// accum sums the outcomes of one row over its issues.
type accum struct {
	issues, skipped int
	now, oracle     float64   // Σ run-now and Σ oracle intensities
	picks           []float64 // Σ intensity of each source's picks
}

func newAccum(n int) accum { return accum{picks: make([]float64, n)} }

func (a *accum) add(now, oracle float64, picks []float64) {
	a.issues++
	a.now += now
	a.oracle += oracle
	for i, p := range picks {
		a.picks[i] += p
	}
}

func (a *accum) merge(b accum) {
	a.issues += b.issues
	a.skipped += b.skipped
	a.now += b.now
	a.oracle += b.oracle
	for i, p := range b.picks {
		a.picks[i] += p
	}
}
