package forecast

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"
)

// TieTolerance is the relative difference below which two mean intensities
// count as equal in Search: a and b are equal when
// |a−b| ≤ TieTolerance·max(|a|, |b|). It absorbs the rounding of prefix sums,
// so that windows whose exact means are equal are ordered by start and zone
// id, never by floating-point noise. Being relative, it assumes the values
// of a series do not cancel out: carbon intensities are ≥ 0 (series of
// mixed sign work, but a mean near zero may then carry more rounding than
// the tolerance).
const TieTolerance = 1e-9

// MaxSlots bounds the number of candidate start times one Search considers.
// A Step so small that the candidate starts between the earliest start and
// the end of the forecasts (or the deadline) would exceed it is rejected with
// EINVALID, so that a request cannot make the search allocate without bound.
const MaxSlots = 1 << 20

// Query describes the job to place.
type Query struct {
	Duration      time.Duration // > 0, any length (not only whole hours)
	EarliestStart time.Time     // the job may not start before this
	Deadline      time.Time     // the job must FINISH by this; zero = no deadline (limited by the forecast end)
	Step          time.Duration // > 0; candidate starts are EarliestStart itself and every later multiple of Step since the Unix epoch
}

// Candidate is a zone the job may run in, with its hourly forecast.
type Candidate struct {
	Zone   Zone
	Series Series // hourly forecast of that zone
}

// Window is a placement of the job: it runs in Zone over [Start, End).
// Mean is the time-weighted mean intensity of the zone's series over
// [Start, End), partial hours at both ends weighted by their overlap.
type Window struct {
	Zone       Zone
	Start, End time.Time
	Mean       float64
}

// ZoneReason says why a zone has no feasible window.
type ZoneReason struct {
	Zone   Zone
	Reason string
}

// Result is the outcome of Search.
type Result struct {
	Best       Window       // PerZone[0]
	PerZone    []Window     // best window of each zone that has a feasible one, ordered best first: (Mean, Start, Zone)
	Infeasible []ZoneReason // zones with no feasible window and why, ordered by zone id
}

// Search finds the window of q.Duration with the lowest time-weighted mean
// intensity across the candidate zones and start times, and the best window
// of each zone.
//
// Series values are piecewise constant over their hours: Values[i] holds over
// [Start+i h, Start+(i+1) h). A window [s, s+Duration) of a zone is feasible
// when it lies entirely inside [Series.Start, Series.End()), s is a candidate
// start (q.EarliestStart itself, or a multiple of q.Step since the Unix epoch
// after it), and s+Duration ≤ q.Deadline when a deadline is set. A window that
// overlaps (by any positive length) an hour whose value is not finite (NaN,
// ±Inf: missing data) is not feasible; the zone's other windows still are.
//
// Ties are broken deterministically and independently of the order of cands:
// within a zone, the chosen window is the earliest start among the windows
// whose mean equals (within TieTolerance) the zone's lowest mean. PerZone is
// ordered by mean; starting from the lowest, the windows whose means equal it
// within TieTolerance form a group ordered by start, then zone id (string
// order); the next group starts at the lowest remaining mean, and so on.
// Best is PerZone[0]. Times in the result are in UTC.
//
// Errors are *Error values with Field set:
//   - EINVALID "duration" when q.Duration ≤ 0, "step" when q.Step ≤ 0 or
//     yields more than MaxSlots candidate starts, "zones" when cands is empty,
//     holds an empty zone id or the same zone twice;
//   - EINFEASIBLE "deadline" when q.Deadline is before
//     q.EarliestStart+q.Duration, "duration" when the duration is longer than
//     every forecast, "zones" when no zone has a feasible window: the message
//     gives the reasons, and the returned Result still lists them in
//     Infeasible.
//
// Search takes O(candidate starts + zones × forecast hours) time, within
// O(zones × candidate starts): the candidate starts are laid out once per
// call; per zone, prefix sums of the hourly values give any window's mean in
// O(1), and since the mean is affine in the start between hour boundaries,
// about one window per hour is evaluated, plus a few inside the winning hour
// to break ties. It allocates only its result (scratch space is recycled between
// calls), and does not modify cands.
func Search(q Query, cands []Candidate) (Result, error) {
	if q.Duration <= 0 {
		return Result{}, FieldErrorf(EINVALID, "duration", "duration must be positive, got %v", q.Duration)
	}
	if q.Step <= 0 {
		return Result{}, FieldErrorf(EINVALID, "step", "step must be positive, got %v", q.Step)
	}
	if len(cands) == 0 {
		return Result{}, FieldErrorf(EINVALID, "zones", "no candidate zones")
	}
	sr := searchers.Get().(*searcher)
	defer sr.release()
	order := slices.Grow(sr.order[:0], len(cands))[:len(cands)]
	sr.order = order
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(string(cands[a].Zone), string(cands[b].Zone)) })
	for i, c := range order {
		z := cands[c].Zone
		if z == "" {
			return Result{}, FieldErrorf(EINVALID, "zones", "empty zone id")
		}
		if i > 0 && cands[order[i-1]].Zone == z {
			return Result{}, FieldErrorf(EINVALID, "zones", "zone %s is listed twice", z)
		}
	}
	d := q.Duration
	if !q.Deadline.IsZero() && q.Deadline.Before(q.EarliestStart.Add(d)) {
		return Result{}, FieldErrorf(EINFEASIBLE, "deadline",
			"deadline %s is before earliest start %s + duration %v = %s",
			stamp(q.Deadline), stamp(q.EarliestStart), d, stamp(q.EarliestStart.Add(d)))
	}

	// The span of the data: candidate starts before every series or windows
	// past every series' end are feasible nowhere.
	var longest int
	var minStart, maxEnd time.Time
	for _, c := range cands {
		s := c.Series
		if len(s.Values) == 0 || len(s.Values) > maxHours {
			continue
		}
		if longest == 0 || s.Start.Before(minStart) {
			minStart = s.Start
		}
		if longest == 0 || s.End().After(maxEnd) {
			maxEnd = s.End()
		}
		longest = max(longest, len(s.Values))
	}
	if longest > 0 && longest < ceilHours(d) {
		return Result{}, FieldErrorf(EINFEASIBLE, "duration",
			"duration %v is longer than every forecast (the longest covers %v)", d, time.Duration(longest)*Hour)
	}

	sr.q, sr.dh = q, float64(d)/float64(Hour)
	if longest > 0 {
		if err := sr.plan(minStart, maxEnd); err != nil {
			return Result{}, err
		}
	}
	var res Result
	picks := slices.Grow(sr.picks[:0], len(order))
	defer func() { sr.picks = picks[:0] }()
	for rank, c := range order {
		p, reason := sr.zone(cands[c])
		if reason != "" {
			res.Infeasible = append(res.Infeasible, ZoneReason{Zone: cands[c].Zone, Reason: reason})
			continue
		}
		p.rank = int32(rank)
		picks = append(picks, p)
	}
	if len(picks) == 0 {
		return res, FieldErrorf(EINFEASIBLE, "zones", "no zone has a feasible window: %s", reasons(res.Infeasible))
	}
	orderPicks(picks)
	res.PerZone = make([]Window, len(picks))
	for i, p := range picks {
		start := sr.first.Add(sr.off(int(p.slot)))
		res.PerZone[i] = Window{Zone: cands[order[p.rank]].Zone, Start: start, End: start.Add(d), Mean: p.mean}
	}
	res.Best = res.PerZone[0]
	return res, nil
}

// pick is the best window of a zone: its mean, its start (an index into the
// candidate starts, so that start order is slot order) and the zone's rank
// in zone id order.
type pick struct {
	mean       float64
	slot, rank int32
}

// MeanOver returns the time-weighted mean of s over [start, start+d), partial
// hours weighted by their overlap. Errors: EINVALID "duration" when d ≤ 0;
// EINFEASIBLE when s does not cover the whole interval ("earliest_start" when
// it begins before s, "duration" when it ends after s) or when an hour it
// overlaps is not finite (missing data).
func MeanOver(s Series, start time.Time, d time.Duration) (float64, error) {
	if d <= 0 {
		return 0, FieldErrorf(EINVALID, "duration", "duration must be positive, got %v", d)
	}
	end := start.Add(d)
	if start.Before(s.Start) || end.After(s.End()) {
		field := "duration"
		if start.Before(s.Start) {
			field = "earliest_start"
		}
		return 0, FieldErrorf(EINFEASIBLE, field, "forecast covers [%s, %s), not [%s, %s)",
			stamp(s.Start), stamp(s.End()), stamp(start), stamp(end))
	}
	lo := start.Sub(s.Start)
	hi := lo + d
	sum := 0.0
	for t := lo; t < hi; {
		h := t / Hour
		next := min((h+1)*Hour, hi)
		v := s.Values[h]
		if v-v != 0 { // NaN or ±Inf
			return 0, FieldErrorf(EINFEASIBLE, "earliest_start", "forecast hour %s is missing",
				stamp(s.Start.Add(h*Hour)))
		}
		sum += v * float64(next-t)
		t = next
	}
	return sum / float64(d), nil
}

// reasons joins the first few reasons of rs into one message.
func reasons(rs []ZoneReason) string {
	const most = 5
	var b strings.Builder
	for i, r := range rs {
		if i == most {
			fmt.Fprintf(&b, "; and %d more zones", len(rs)-most)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", r.Zone, r.Reason)
	}
	return b.String()
}

// epochRem returns the non-negative remainder of t's time since the Unix
// epoch divided by step, exactly for any t (no int64 nanosecond overflow).
func epochRem(t time.Time, step time.Duration) time.Duration {
	m := uint64(step)
	sec := uint64(floorMod(t.Unix(), int64(step)))
	hi, lo := bits.Mul64(sec, 1e9%m)
	r := bits.Rem64(hi, lo, m)
	r = (r + uint64(t.Nanosecond())%m) % m
	return time.Duration(r)
}

// maxHours is the most hours a Series can hold for Series.End to be right.
const maxHours = int(math.MaxInt64 / int64(Hour))

// ceilHours returns the number of hours d overlaps when it starts on the
// hour.
func ceilHours(d time.Duration) int { return int(d/Hour) + int((d%Hour+Hour-1)/Hour) }

// floorMod returns a mod m in [0, m) for m > 0.
func floorMod[T ~int64](a, m T) T {
	r := a % m
	if r < 0 {
		r += m
	}
	return r
}

// stamp formats t for messages.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
