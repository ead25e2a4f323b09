package controller

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/hold"
)

// DefaultRedecideGain is the least share of its forecast emissions a new
// start must save over the held one for the controller to move a hold.
// On the 2021-H1 decision backtest (carbonctl evaluate --decisions
// --redecide 1h --redecide-gain G) the capture of the perfect forecast's
// saving is 0.758 deciding once, 0.783 re-deciding at any gain, 0.776 at
// 0.02, 0.770 at 0.05 and 0.763 at 0.10: 0.02 keeps most of the gain while
// a forecast's small hourly changes move nothing.
const DefaultRedecideGain = 0.02

// redecideTimeout bounds each question to the gateway.
const redecideTimeout = 5 * time.Second

// Rescheduler answers scheduling requests: the gateway's service.
type Rescheduler interface {
	Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error)
}

var _ Rescheduler = (*gateway.Service)(nil)

// redecider re-asks the gateway, once per forecast hour while a workload
// is held, for the best start before its deadline guard — in its decided
// zone, or, when the webhook recorded candidates (hold.AnnotationCandidates)
// and nothing of the workload has started (place.go), in any of them — and
// moves the hold when the new window's forecast beats the held one's
// (under the same, newer forecast) by more than gain: its time, and its
// place with the pinning in the same patch.
type redecider struct {
	sched   Rescheduler
	hourly  bool // re-decide once per forecast hour (else only move off, moveoff.go)
	gain    float64
	timeout time.Duration

	mu    sync.Mutex
	asked map[string]time.Time // key → forecast hour last asked
}

// due reports whether key has not been asked in now's hour; a workload
// seen first is not (its decision was made with this hour's forecast).
func (d *redecider) due(key string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := forecast.HourFloor(now)
	last, seen := d.asked[key]
	d.asked[key] = h
	return seen && h.After(last)
}

func (d *redecider) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.asked, key)
}

// nextAsk is when to look again at a workload held until at: the next
// forecast hour, or at, whichever is first.
func nextAsk(now, at time.Time) time.Time {
	if h := forecast.HourFloor(now).Add(forecast.Hour); h.Before(at) {
		return h
	}
	return at
}

// better reports whether best should replace the held window cur: another
// start or zone, not past releaseBy, whose forecast mean is lower by more
// than gain of cur's. It returns the share saved.
func better(cur, best forecast.Window, releaseBy time.Time, gain float64) (float64, bool) {
	if (best.Start.Equal(cur.Start) && best.Zone == cur.Zone) || best.Start.After(releaseBy) || !(cur.Mean > 0) {
		return 0, false
	}
	share := (cur.Mean - best.Mean) / cur.Mean
	return share, share > gain
}

// ask is one question to the gateway: the best window of zones for a
// run time within [from, to).
type ask struct {
	zones    []string
	from, to time.Time
}

// compare asks the gateway for the best window (best) and for the held
// one (cur) at once, so that a slow gateway delays a re-decision or a
// release by one timeout, not two.
func (d *redecider) compare(ctx context.Context, dur time.Duration, best, cur ask) (bw, cw forecast.Window, err error) {
	var cerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		cw, cerr = d.window(ctx, dur, cur)
	}()
	bw, err = d.window(ctx, dur, best)
	<-done
	if err == nil {
		err = cerr
	}
	return bw, cw, err
}

// window asks q for dur.
func (d *redecider) window(ctx context.Context, dur time.Duration, q ask) (forecast.Window, error) {
	text := gateway.RequestText{Zones: q.zones, Duration: new(dur.String()),
		EarliestStart: new(q.from.UTC().Format(time.RFC3339)), Deadline: new(q.to.UTC().Format(time.RFC3339))}
	req, err := gateway.ParseRequest(text)
	if err != nil {
		return forecast.Window{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	dec, err := d.sched.Schedule(ctx, req)
	if err != nil {
		return forecast.Window{}, err
	}
	p := dec.Decision
	return forecast.Window{Zone: p.Zone, Start: p.Start, End: p.End, Mean: p.Mean}, nil
}

// redecide re-asks for obj held under d at now and moves it when better;
// it returns the decision in force.
func (r *releaser) redecide(ctx context.Context, obj client.Object, d hold.Decision, now time.Time) hold.Decision {
	a := obj.GetAnnotations()
	dur, err := hold.DecidedDuration(a)
	if err != nil || d.Zone == "" {
		return d
	}
	pl := r.places(obj, d)
	best, cur, err := r.redecider.compare(ctx, dur, ask{hold.Zones(pl.candidates), now, d.ReleaseBy.Add(dur)}, ask{[]string{d.Zone}, d.Start, d.Start.Add(dur)})
	if err == nil {
		return r.move(ctx, obj, d, pl, cur, best, dur)
	}
	r.metrics.redecisions.WithLabelValues(r.kind, "failed", "").Inc()
	r.log.Warn("redecide: asking the gateway", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
	return d
}

// places are where a held workload may be moved to: its candidates, and
// the one it is held in.
type places struct {
	candidates []hold.Candidate
	from       hold.Candidate
}

// places returns where obj, held under d, may be moved to: the candidates
// the webhook signed when obj's kind can move and obj is still pinned to
// d's zone as carbongate pinned it; otherwise d's zone alone (time only).
func (r *releaser) places(obj client.Object, d hold.Decision) places {
	only := places{candidates: []hold.Candidate{{Zone: d.Zone, Region: d.Region}}}
	only.from = only.candidates[0]
	if r.place == nil {
		return only
	}
	cs, ok, err := hold.ParseCandidates(obj.GetAnnotations())
	if !ok || err != nil {
		return only
	}
	i := slices.IndexFunc(cs, func(c hold.Candidate) bool {
		return c.Zone == d.Zone && c.Region == d.Region && r.place.pinned(obj, c)
	})
	if i < 0 {
		return only
	}
	return places{candidates: cs, from: cs[i]}
}

// The kinds of move, for the redecisions counter.
const (
	moveTime         = "time"
	movePlace        = "place"
	movePlaceAndTime = "place-and-time"
)

// move moves obj's hold from cur to best when better — its time, and its
// place among pl with the pinning — re-signing the decision in the same
// patch, and counts it.
func (r *releaser) move(ctx context.Context, obj client.Object, d hold.Decision, pl places, cur, best forecast.Window, dur time.Duration) hold.Decision {
	share, ok := better(cur, best, d.ReleaseBy, r.redecider.gain)
	to, found := hold.Find(pl.candidates, string(best.Zone), hold.WorkloadKey(obj.GetNamespace(), obj.GetName()), pl.from)
	if !ok || !found {
		r.metrics.redecisions.WithLabelValues(r.kind, "kept", "").Inc()
		return d
	}
	nd, kind, err := r.shift(ctx, obj, d, pl.from, to, cur, best, dur)
	if err != nil {
		return d
	}
	r.metrics.redecisions.WithLabelValues(r.kind, "moved", kind).Inc()
	r.events.Eventf(obj, corev1.EventTypeNormal, "Redecided", "moved from %s to %s: the newer forecast puts it %.0f%% lower (%.1f → %.1f gCO2eq/kWh)%s",
		where(d, pl.from), where(nd, to), 100*share, cur.Mean, best.Mean, promised(obj.GetAnnotations()))
	r.log.Info("redecided", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "move", kind,
		"from", d.Start, "to", nd.Start, "from_zone", d.Zone, "to_zone", nd.Zone, "gain", share)
	return nd
}

// shift moves obj's hold under d from the place from, where its forecast
// window is cur, to best in the place to — its time, and its pinning when
// the place changes — moving its promise and re-signing the decision in
// one patch; it returns the decision in force and the kind of move (an
// error, counted: obj is unchanged where it is stored).
func (r *releaser) shift(ctx context.Context, obj client.Object, d hold.Decision, from, to hold.Candidate, cur, best forecast.Window, dur time.Duration) (hold.Decision, string, error) {
	orig := obj.DeepCopyObject().(client.Object)
	nd := d
	nd.Start = best.Start.UTC().Truncate(time.Second)
	kind := moveTime
	a := obj.GetAnnotations()
	if to.Zone != from.Zone || to.Cluster != from.Cluster {
		kind = movePlaceAndTime
		if nd.Start.Equal(d.Start) {
			kind = movePlace
		}
		nd.Zone, nd.Region = to.Zone, to.Region
		r.place.repin(obj, from, to)
		delete(a, hold.AnnotationRegion) // set again unless the new place has none
		if to.Cluster != "" {
			a[hold.AnnotationCluster] = to.Cluster
		}
	}
	for k, v := range nd.Annotations() {
		a[k] = v
	}
	gain, powered := repromise(a, cur, best, dur)
	a[hold.AnnotationSignature] = r.signer.Sign(hold.Subject{Kind: r.kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}, a)
	obj.SetAnnotations(a)
	if err := patchOnce(ctx, r.client, obj, orig); err != nil {
		r.metrics.redecisions.WithLabelValues(r.kind, "failed", "").Inc()
		r.log.Warn("moving a hold", "kind", r.kind, "namespace", obj.GetNamespace(), "name", obj.GetName(), "error", err)
		return d, "", err
	}
	if powered && gain > 0 { // a counter; a move off an unavailable place may lose
		r.metrics.redecisionGain.WithLabelValues(obj.GetNamespace()).Add(gain)
	}
	return nd, kind, nil
}

// where says when and where d runs: its start and zone, with the region
// or member cluster of c.
func where(d hold.Decision, c hold.Candidate) string {
	place := d.Zone
	switch {
	case c.Cluster != "":
		place += " (member cluster " + c.Cluster + ")"
	case d.Region != "":
		place += " (" + d.Region + ")"
	}
	return d.Start.Format(time.RFC3339) + " in " + place
}

// repromise adds the move from cur to best to the promise on the
// annotations a — the saving against running at once at admission, each
// step by the forecast it was decided with: the move's forecast gain in
// grams for its power, declared or estimated (hold.AnnotationAvoidedGrams) and in points
// of the baseline's forecast intensity (hold.AnnotationSavingsPct; the
// baseline's intensity is read back from the admission's provenance). It
// returns the gain in grams; powered is false without a power.
func repromise(a map[string]string, cur, best forecast.Window, dur time.Duration) (gain float64, powered bool) {
	if p, err := strconv.ParseFloat(a[hold.AnnotationSavingsPct], 64); err == nil && !math.IsNaN(p) && !math.IsInf(p, 0) {
		if b, ok := hold.BaselineMean(a); ok {
			a[hold.AnnotationSavingsPct] = strconv.FormatFloat(p+100*(cur.Mean-best.Mean)/b, 'f', 1, 64)
		}
	}
	w, _, err := hold.Power(a)
	if err != nil || w == 0 {
		return 0, false
	}
	gain = hold.Grams(w, dur, cur.Mean-best.Mean)
	if g, err := strconv.ParseFloat(a[hold.AnnotationAvoidedGrams], 64); err == nil && !math.IsNaN(g) && !math.IsInf(g, 0) {
		a[hold.AnnotationAvoidedGrams] = strconv.FormatFloat(g+gain, 'f', 1, 64)
	}
	return gain, true
}

// promised says what a moved decision's promise now is, for its Event.
func promised(a map[string]string) string {
	pct, ok := a[hold.AnnotationSavingsPct]
	if !ok {
		return ""
	}
	s := "; promised saving now " + pct + "%"
	if g, ok := a[hold.AnnotationAvoidedGrams]; ok {
		s += " (" + g + " g)"
	}
	return s
}
