// Package ledger accounts for what holding a workload really saved: the
// grams it emitted where and when it ran, against the grams running it at
// admission time would have emitted, both charged at observed intensity
// (never at a forecast), beside the saving the decision's forecast
// promised. A workload whose hours are not all observed yet is partial
// (with its coverage) or pending, never filled in.
package ledger

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// Observations gives observed hourly intensity: zone's signal over [from,
// to) (whole hours) as a series starting at from, NaN where nothing was
// observed. store.Observed and evaluate.SeriesFunc implement it.
type Observations interface {
	Observed(ctx context.Context, zone forecast.Zone, signal forecast.Signal, from, to time.Time) (forecast.Series, error)
}

// Workload is what the ledger knows of one held workload.
type Workload struct {
	Kind, Namespace, Name string
	// Zone is the grid zone it was placed in (and ran in).
	Zone forecast.Zone
	// BaselineZone is where running at admission would have run; "":
	// Zone (a shift in time only).
	BaselineZone forecast.Zone
	Signal       forecast.Signal
	// PowerWatts is its declared average power, or the one estimated from
	// its size when PowerEstimated; 0: unknown (no grams).
	PowerWatts     float64
	PowerEstimated bool
	// AdmittedAt is when it was admitted (and decided).
	AdmittedAt time.Time
	// Started and Ended are its actual run as the API reports it; zero
	// when it has not started or not ended.
	Started, Ended time.Time
	// PromisedGrams is the avoided grams its decision's forecast
	// promised, when HasPromise.
	PromisedGrams float64
	HasPromise    bool
	// Deleted is set for a workload deleted before it ran.
	Deleted bool
	// Mode is the mode it was decided in (enforce; shadow: see Shadow),
	// kept apart in Totals.
	Mode string
}

// Status is where a workload's account stands.
type Status string

// Statuses: only realized entries carry realized grams.
const (
	Realized Status = "realized" // every hour of both windows observed
	Partial  Status = "partial"  // some hours observed: see Coverage
	Pending  Status = "pending"  // not started, running, or no hour observed yet
	Deleted  Status = "deleted"  // deleted before it ran: nothing to realize
	NoPower  Status = "no-power" // ran, but declared no power: no grams
)

// Accounting names the emission factor a signal stands for.
func Accounting(s forecast.Signal) string {
	if s == forecast.SignalMarginal {
		return "marginal (operating emissions rate, CO2 only)"
	}
	return "location-based average (" + string(s) + ")"
}

// Entry is one workload's account. The gram figures are nil unless Status
// is Realized.
type Entry struct {
	Workload
	Status Status
	// Reason says why an entry is not realized.
	Reason string
	// Coverage is the share of the hours both windows overlap that are
	// observed, in [0, 1].
	Coverage   float64
	Accounting string
	// Duration is the actual run time (Ended − Started).
	Duration  time.Duration
	EnergyKWh float64
	// RealizedGrams is emitted over [Started, Ended) in Zone,
	// BaselineGrams over [AdmittedAt, AdmittedAt+Duration) in
	// BaselineZone, AvoidedGrams their difference.
	RealizedGrams, BaselineGrams, AvoidedGrams *float64
}

// Account charges w at the observations of obs.
func Account(ctx context.Context, obs Observations, w Workload) (Entry, error) {
	e := Entry{Workload: w, Accounting: Accounting(w.Signal)}
	switch {
	case w.Started.IsZero() && w.Deleted:
		e.Status, e.Reason = Deleted, "deleted before it ran"
		return e, nil
	case w.Started.IsZero():
		e.Status, e.Reason = Pending, "not started"
		return e, nil
	case w.Ended.IsZero():
		e.Status, e.Reason = Pending, "running"
		return e, nil
	case !w.Ended.After(w.Started):
		return e, forecast.FieldErrorf(forecast.EINVALID, "end", "%s/%s ends at %s, not after its start %s", w.Namespace, w.Name, w.Ended.Format(time.RFC3339), w.Started.Format(time.RFC3339))
	}
	e.Duration = w.Ended.Sub(w.Started)
	if w.PowerWatts <= 0 {
		e.Status, e.Reason = NoPower, "no declared power"
		return e, nil
	}
	e.EnergyKWh = w.PowerWatts / 1000 * e.Duration.Hours()
	base := w.BaselineZone
	if base == "" {
		base = w.Zone
	}
	ran, err := charge(ctx, obs, w.Zone, w.Signal, w.Started, w.Ended)
	if err != nil {
		return e, err
	}
	would, err := charge(ctx, obs, base, w.Signal, w.AdmittedAt, w.AdmittedAt.Add(e.Duration))
	if err != nil {
		return e, err
	}
	e.Coverage = float64(ran.observed+would.observed) / float64(ran.hours+would.hours)
	switch {
	case e.Coverage == 0:
		e.Status, e.Reason = Pending, "no hour observed yet"
		return e, nil
	case e.Coverage < 1:
		e.Status, e.Reason = Partial, "some hours not observed"
		return e, nil
	}
	kw := w.PowerWatts / 1000
	r, b := kw*ran.integral, kw*would.integral
	a := b - r
	e.Status, e.RealizedGrams, e.BaselineGrams, e.AvoidedGrams = Realized, &r, &b, &a
	return e, nil
}

// charged is the observed intensity integrated over a window.
type charged struct {
	integral        float64 // Σ intensity × hours overlapped, observed hours only
	hours, observed int     // hours the window overlaps; of them observed
}

// charge integrates zone's observed signal over [from, to), partial hours
// weighted by their overlap.
func charge(ctx context.Context, obs Observations, zone forecast.Zone, sig forecast.Signal, from, to time.Time) (charged, error) {
	h0 := forecast.HourFloor(from)
	h1 := forecast.HourFloor(to)
	if !h1.Equal(to) {
		h1 = h1.Add(forecast.Hour)
	}
	s, err := obs.Observed(ctx, zone, sig, h0, h1)
	if err != nil {
		return charged{}, err
	}
	var c charged
	for t := h0; t.Before(h1); t = t.Add(forecast.Hour) {
		c.hours++
		v, ok := s.At(t)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		c.observed++
		lo, hi := maxTime(t, from), minTime(t.Add(forecast.Hour), to)
		c.integral += v * hi.Sub(lo).Hours()
	}
	return c, nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
