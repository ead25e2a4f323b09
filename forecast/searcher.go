package forecast

// The searcher behind Search: candidate starts laid out once per phase of
// the hour grid, each zone's best start found run by run over prefix sums.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"
)

// slot is one candidate start, located on the hour grid of a phase: the
// window [start, start+D) begins in grid hour ks and ends in grid hour ke
// (exclusive end; kce is one past the last hour it overlaps: ke, or ke+1 when
// the end is not on the hour). Its integral, in value·hours, is
//
//	wa·v[ks] + (p[ke] − p[kp]) + wb·v[ke]
//
// where wa is the part of hour ks it covers and wb that of hour ke; kp =
// ks+1 skips the first hour in the prefix sums. A window inside one hour has
// ks = kp = ke, wa = D in hours, wb = 0. Summing the partial hours apart from
// the prefix sums (rather than subtracting two integrals from the series
// start) keeps short windows exact: no cancellation. Slots are computed when
// needed (see searcher.slot), never tabulated.
type slot struct {
	wa, wb          float64
	ks, kp, ke, kce int32
}

// cell is one grid hour of a zone: p integrates the zone's values (in
// value·hours) from the zone's first used hour to the start of this hour, v is
// this hour's value (0 when missing, so that products with fraction 0 stay 0).
type cell struct{ p, v float64 }

// run is a maximal range [first, last] of consecutive slots that start in the
// same hour ks and end in the same hour ke. Over a run the integral is affine
// in the start time, with slope v[ke] − v[ks] per hour (0 when ks = ke), so
// its lowest value is at one end, and the slots tied with it form a prefix or
// a suffix of the run. That lets a zone's search look at one slot per run
// (about one per hour) instead of every slot. All slots of a run overlap hours
// ks to kce−1, except that the first may end exactly at the start of hour ke
// and overlap only ks to kce0−1 = ke−1: with a missing hour ke, it alone is
// feasible. ends holds the weights of the first and last slot, and kp the
// prefix-sum hour of every slot, so that the search reads no slot for runs
// that lie wholly inside a zone's range.
type run struct {
	first, last, ks, kp, ke, kce, kce0 int32
	ends                               [2]struct{ wa, wb float64 }
}

// phase holds the runs of the zones whose hours start at the same offset
// within the hour (normally all of them: Series.Start is hour-aligned).
type phase struct {
	g0   time.Duration // first is g0 after this phase's grid origin (0 ≤ g0 < 1h)
	runs []run
}

// searcher holds what one Search shares between zones. The candidate starts
// are first + off(i) for 0 ≤ i < n: first itself, then gap, gap+Step, … after
// it; they are computed, not listed, so that the per-call setup costs
// O(runs), not O(candidate starts). Searchers are recycled through
// searchers, so that their scratch space is allocated once, not per call.
type searcher struct {
	q      Query
	dh     float64       // duration in hours
	first  time.Time     // first candidate start, UTC
	gap    time.Duration // offset of the second candidate start from first; 0 < gap ≤ Step
	n      int           // number of candidate starts
	phases []phase       // len: phases of this call; beyond it, runs kept for reuse
	cells  []cell        // scratch: one zone's grid hours
	bad    []int32       // scratch: missing hours before each grid hour
	lows   []float64     // scratch: lowest integral of each run
	order  []int32       // scratch: candidates in zone id order
	picks  []pick        // scratch: best window of each zone
}

// searchers recycles searchers between calls of Search (a cache, not
// shared state: a searcher is reset before it is reused).
var searchers = sync.Pool{New: func() any { return new(searcher) }}

// maxKept bounds the scratch space, in elements of each slice, that a
// searcher keeps for the next Search: a rare huge search should not pin its
// memory.
const maxKept = 1 << 16

// release resets sr and returns it to searchers, unless it holds too much.
func (sr *searcher) release() {
	keep := len(sr.cells) <= maxKept && cap(sr.order) <= maxKept && cap(sr.picks) <= maxKept
	for _, ph := range sr.phases[:cap(sr.phases)] {
		keep = keep && cap(ph.runs) <= maxKept
	}
	if !keep {
		return
	}
	sr.q, sr.first, sr.gap, sr.n = Query{}, time.Time{}, 0, 0
	sr.phases = sr.phases[:0]
	searchers.Put(sr)
}

// plan lays out the candidate starts that may fit inside [minStart, maxEnd)
// and before the deadline.
func (sr *searcher) plan(minStart, maxEnd time.Time) error {
	q := sr.q
	step := q.Step
	first, gap := q.EarliestStart.UTC(), step-epochRem(q.EarliestStart, step)
	if minStart.After(q.EarliestStart) {
		// EarliestStart precedes every series: start at the first multiple
		// of step inside the data.
		first = minStart.UTC()
		if r := epochRem(first, step); r != 0 {
			first = first.Add(step - r)
		}
		gap = step
	}
	last := maxEnd
	if !q.Deadline.IsZero() && q.Deadline.Before(last) {
		last = q.Deadline
	}
	span := last.Add(-q.Duration).Sub(first) // latest start, as an offset from first
	if span < 0 {
		return nil
	}
	n := int64(1)
	if span >= gap {
		n += 1 + int64((span-gap)/step)
	}
	if n > MaxSlots {
		return FieldErrorf(EINVALID, "step", "step %v yields %d candidate starts between %s and %s; at most %d",
			step, n, stamp(first), stamp(last.Add(-q.Duration)), MaxSlots)
	}
	sr.first, sr.gap, sr.n = first, gap, int(n)
	return nil
}

// off returns the offset of candidate start i from first.
func (sr *searcher) off(i int) time.Duration {
	if i == 0 {
		return 0
	}
	return sr.gap + time.Duration(i-1)*sr.q.Step
}

// index returns the first candidate start at or after offset x from first,
// or n when there is none.
func (sr *searcher) index(x time.Duration) int {
	if x <= 0 {
		return 0
	}
	if x <= sr.gap {
		return min(1, sr.n)
	}
	k := 1 + (x-sr.gap-1)/sr.q.Step // x−gap > 0: ceil((x−gap)/Step)
	if k >= time.Duration(sr.n-1) {
		return sr.n
	}
	return 1 + int(k)
}

// slot returns candidate start i on the hour grid whose origin is g0 before
// first.
func (sr *searcher) slot(i int, g0 time.Duration) slot {
	s := sr.off(i) + g0
	e := s + sr.q.Duration
	ks, ke, kce := s/Hour, e/Hour, (e+Hour-1)/Hour
	if ks == ke {
		return slot{wa: sr.dh, ks: int32(ks), kp: int32(ks), ke: int32(ke), kce: int32(kce)}
	}
	return slot{
		wa: float64((ks+1)*Hour-s) / float64(Hour), wb: float64(e%Hour) / float64(Hour),
		ks: int32(ks), kp: int32(ks + 1), ke: int32(ke), kce: int32(kce),
	}
}

// phase returns the runs of the phase whose grid origin is g0 before first.
// It jumps from run to run: a run ends just before the first candidate start
// whose window starts or ends in a later hour.
func (sr *searcher) phase(g0 time.Duration) *phase {
	for i := range sr.phases {
		if sr.phases[i].g0 == g0 {
			return &sr.phases[i]
		}
	}
	// Every run boundary is a start or an end crossing an hour boundary
	// (both at once when the duration is whole hours).
	span := sr.off(sr.n - 1)
	most := min(int64(sr.n), 2*int64(span/Hour)+3)
	if sr.q.Duration%Hour == 0 {
		most = min(int64(sr.n), int64(span/Hour)+2)
	}
	var runs []run
	if len(sr.phases) < cap(sr.phases) {
		runs = sr.phases[:len(sr.phases)+1][len(sr.phases)].runs[:0]
	}
	runs = slices.Grow(runs, int(most))
	for i := 0; i < sr.n; {
		a := sr.slot(i, g0)
		o := sr.off(i)
		s := o + g0
		e := s + sr.q.Duration
		// Offsets from first at which the start, and the end, enter the
		// next hour.
		dn := min(Hour-s%Hour, Hour-e%Hour)
		j := sr.n
		if o <= math.MaxInt64-dn {
			j = sr.index(o + dn)
		}
		b := a
		if j-1 > i {
			b = sr.slot(j-1, g0)
		}
		ru := run{first: int32(i), last: int32(j - 1), ks: a.ks, kp: a.kp, ke: a.ke, kce: b.kce, kce0: a.kce}
		ru.ends[0].wa, ru.ends[0].wb = a.wa, a.wb
		ru.ends[1].wa, ru.ends[1].wb = b.wa, b.wb
		runs = append(runs, ru)
		i = j
	}
	sr.phases = append(sr.phases, phase{g0: g0, runs: runs})
	return &sr.phases[len(sr.phases)-1]
}

// zone returns the best window of c, or why it has none.
func (sr *searcher) zone(c Candidate) (pick, string) {
	q, s := sr.q, c.Series
	n := len(s.Values)
	if n == 0 {
		return pick{}, "no forecast data"
	}
	if n > maxHours {
		return pick{}, "forecast longer than a time.Duration can span"
	}
	if n < ceilHours(q.Duration) {
		return pick{}, fmt.Sprintf("forecast covers only %v, less than the duration %v", time.Duration(n)*Hour, q.Duration)
	}
	limit := s.End()
	if !q.Deadline.IsZero() && q.Deadline.Before(limit) {
		limit = q.Deadline
	}
	// Candidate starts in [s.Start, limit-D].
	lo := sr.index(s.Start.Sub(sr.first))
	hi := sr.n
	if latest := limit.Add(-q.Duration).Sub(sr.first); latest < math.MaxInt64 {
		hi = sr.index(latest + 1)
	}
	if lo >= hi {
		return pick{}, sr.noStart(s, limit)
	}

	// The zone's hour grid: origin g0 before first, with s.Start on it.
	off := s.Start.Sub(sr.first)
	g0 := floorMod(-off, Hour)
	ph := sr.phase(g0)
	dz := int((off + g0) / Hour) // grid hour of s.Values[0]
	base, top := int(sr.slot(lo, g0).ks), int(sr.slot(hi-1, g0).kce)
	if len(sr.cells) <= top {
		sr.cells = make([]cell, top+1+top/4)
		sr.bad = make([]int32, len(sr.cells))
	}
	cells, bad := sr.cells[:top+1], sr.bad[:top+1]
	sum, missing := 0.0, int32(0)
	for k, x := range s.Values[base-dz : top-dz] {
		bad[base+k] = missing
		if x-x != 0 { // NaN or ±Inf: missing
			x = 0
			missing++
		}
		cells[base+k] = cell{sum, x}
		sum += x
	}
	cells[top], bad[top] = cell{sum, 0}, missing

	if len(sr.lows) < len(ph.runs) {
		sr.lows = make([]float64, len(ph.runs))
	}
	j := sr.bestSlot(g0, ph.runs, lo, hi, cells, bad, sr.lows)
	if j < 0 {
		return pick{}, "every window that fits touches missing (NaN) forecast hours"
	}
	sl := sr.slot(j, g0)
	return pick{mean: integral(&sl, cells) / sr.dh, slot: int32(j)}, ""
}

// integral returns the integral (value·hours) of the zone over the window of
// slot s.
func integral(s *slot, cells []cell) float64 {
	b := cells[s.ke]
	return s.wa*cells[s.ks].v + (b.p - cells[s.kp].p) + s.wb*b.v
}

// bestSlot returns the earliest of the slots lo ≤ j < hi whose integral equals
// the lowest one within TieTolerance, skipping slots that overlap a missing
// hour, or -1 when every slot does. It visits the runs (see run) that cover
// the slots: first for the lowest value of each, at one end, then for the
// earliest run with a tied slot, and the earliest tied slot in it. The slots
// are on the grid whose origin is g0 before first; lows is scratch space for
// one value per run.
func (sr *searcher) bestSlot(g0 time.Duration, runs []run, lo, hi int, cells []cell, bad []int32, lows []float64) int {
	r0, _ := slices.BinarySearchFunc(runs, int32(lo), func(r run, lo int32) int { return cmp.Compare(r.last, lo) })
	r1, _ := slices.BinarySearchFunc(runs, int32(hi), func(r run, hi int32) int { return cmp.Compare(r.first, hi) })
	runs, lows = runs[r0:r1], lows[:r1-r0]
	n := len(runs)
	top := sr.slot(hi-1, g0).kce
	lows[0] = sr.runLow(&runs[0], g0, lo, hi, top, cells, bad)
	lows[n-1] = sr.runLow(&runs[n-1], g0, lo, hi, top, cells, bad)
	m := min(lows[0], lows[n-1])
	// The runs between the first and the last lie wholly inside [lo, hi).
	for r := 1; r < n-1; r++ {
		ru := &runs[r]
		var v float64
		if cs, ce := cells[ru.ks], cells[ru.ke]; bad[ru.kce] == bad[ru.ks] {
			// Lowest at the first slot, or at the last when the run
			// decreases (chosen by the sign bit, not a branch: the slope is
			// random). Same arithmetic as integral.
			w := &ru.ends[math.Float64bits(ce.v-cs.v)>>63]
			v = w.wa*cs.v + (ce.p - cells[ru.kp].p) + w.wb*ce.v
		} else {
			v = sr.runLow(ru, g0, lo, hi, top, cells, bad)
		}
		lows[r] = v
		m = min(m, v)
	}
	if math.IsInf(m, 1) {
		return -1
	}
	// The earliest tied slot is in the first run whose lowest value ties.
	bound := tieBound(m)
	r := 0
	for lows[r] > bound {
		r++
	}
	ru := &runs[r]
	a, b := max(int(ru.first), lo), min(int(ru.last), hi-1)
	if bad[min(ru.kce, top)] != bad[ru.ks] {
		return a // the only feasible slot of the run
	}
	for j := a; j < b; j++ {
		if sl := sr.slot(j, g0); integral(&sl, cells) <= bound {
			return j
		}
	}
	return b
}

// runLow returns the lowest integral over the feasible slots of ru in
// [lo, hi), or +Inf when there are none; top is the kce of slot hi−1.
func (sr *searcher) runLow(ru *run, g0 time.Duration, lo, hi int, top int32, cells []cell, bad []int32) float64 {
	first, last := max(int(ru.first), lo), min(int(ru.last), hi-1)
	if b := bad[ru.ks]; bad[min(ru.kce, top)] != b {
		// Some slot overlaps a missing hour: at most the first is feasible.
		if int(ru.first) < lo || bad[ru.kce0] != b {
			return math.Inf(1)
		}
		last = first
	}
	j := first
	if cells[ru.ke].v < cells[ru.ks].v {
		j = last
	}
	sl := sr.slot(j, g0)
	return integral(&sl, cells)
}

// tieBound returns the highest value that equals m within TieTolerance when
// m is the lowest: w ≤ tieBound(m) ⇔ w−m ≤ TieTolerance·max(|w|, |m|) for
// w ≥ m.
func tieBound(m float64) float64 {
	if m < 0 {
		return m * (1 - TieTolerance)
	}
	return m / (1 - TieTolerance)
}

// tied reports whether w ≥ m equals m within TieTolerance.
func tied(w, m float64) bool { return w <= tieBound(m) }

// orderPicks sorts ps by mean, groups the picks whose means are tied with the
// lowest mean of the group, and orders each group by start, then zone id.
func orderPicks(ps []pick) {
	slices.SortFunc(ps, func(a, b pick) int {
		return cmp.Or(cmp.Compare(a.mean, b.mean), cmp.Compare(a.slot, b.slot), cmp.Compare(a.rank, b.rank))
	})
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && tied(ps[j].mean, ps[i].mean) {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(ps[i:j], func(a, b pick) int {
				return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.rank, b.rank))
			})
		}
		i = j
	}
}

// noStart explains why no candidate start of a zone whose series is s fits
// before limit.
func (sr *searcher) noStart(s Series, limit time.Time) string {
	q := sr.q
	from := s.Start
	if q.EarliestStart.After(from) {
		from = q.EarliestStart
	}
	what := "forecast end"
	if limit.Before(s.End()) {
		what = "deadline"
	}
	if room := limit.Sub(from); room < q.Duration {
		if room < 0 {
			room = 0
		}
		return fmt.Sprintf("only %v between %s and the %s %s, less than the duration %v",
			room, stamp(from), what, stamp(limit), q.Duration)
	}
	return fmt.Sprintf("no candidate start (earliest start %s, then every multiple of %v) lets a %v window fit between %s and the %s %s",
		stamp(q.EarliestStart), q.Step, q.Duration, stamp(from), what, stamp(limit))
}
