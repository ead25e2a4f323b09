// Package gateway is carbongate's scheduling service: it validates a
// scheduling request, maps cloud regions to zones, fetches the forecast of
// every candidate zone (from the cache, concurrently on a miss), runs the
// window search and returns the decision with its baseline, alternatives
// and provenance. Transports (gateway/httpapi) only translate.
package gateway

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/cache"
	"github.com/carbongate/carbongate/gateway/clock"
	"github.com/carbongate/carbongate/gateway/guard"
)

// Unit is the unit of every intensity the gateway returns.
const Unit = "gCO2eq/kWh"

// Defaults and limits of a scheduling request.
const (
	DefaultStep    = 5 * time.Minute
	MinStep        = time.Minute
	DefaultHorizon = 96 * time.Hour
	MaxCandidates  = 256
)

// Location is a cloud region.
type Location struct {
	Provider string
	Region   string
}

func (l Location) String() string { return l.Provider + "/" + l.Region }

// Request asks where and when to run a job. The transport parses it; the
// service validates what needs the service's knowledge (zones, regions,
// horizon, the clock).
type Request struct {
	Zones         []forecast.Zone
	Locations     []Location
	Duration      time.Duration   // > 0, at most the horizon
	EarliestStart time.Time       // zero or past: now
	Deadline      time.Time       // the job must finish by it; zero: the forecast horizon
	Signal        forecast.Signal // "": lifecycle
	Origin        forecast.Zone   // "": the first candidate
	Step          time.Duration   // 0: the service's default step; at least MinStep
	Power         *Power          // nil: no energy or emissions in the answer
}

// Placement is a window of the job in one zone.
type Placement struct {
	Zone     forecast.Zone
	Location *Location // the cloud region that maps to Zone, when the request named one
	Start    time.Time
	End      time.Time
	Mean     float64 // time-weighted mean intensity over [Start, End), Unit
	// EmissionsG is the job's emissions in this window, Mean × Energy.KWh
	// grams CO2e, when the request gave a power figure; 0 otherwise.
	EmissionsG float64
}

// Reading says which clock answered and what time it read.
type Reading struct {
	Mode string
	Now  time.Time
}

// Decision answers a Request.
type Decision struct {
	Decision     Placement
	Baseline     *Placement // running at the earliest start in the origin zone; nil when it cannot be computed
	SavingsPct   *float64   // (baseline − decision) / baseline × 100; nil without a baseline
	Alternatives []Placement
	Infeasible   []forecast.ZoneReason
	// Capped lists the zones, better than Decision's, that the zone cap
	// (Config.ZoneCap) steered this decision away from, best first; nil
	// when the decision is the best window.
	Capped     []guard.Capped
	Provenance map[forecast.Zone]forecast.Provenance
	Signal     forecast.Signal
	Clock      Reading
	Energy     *Energy // the job's energy, savings in grams and embodied emissions; nil without Request.Power
}

// ZoneInfo describes a zone the gateway can forecast.
type ZoneInfo struct {
	Zone        forecast.Zone
	History     bool                                // observed data is available
	Climatology float64                             // annual mean intensity; 0 when unknown
	Locations   []Location                          // cloud regions mapped to it
	Forecasters map[forecast.Signal]forecast.Source // the first fallback step with a forecaster, per signal
}

// Forecasts gives the current forecast of a zone; *cache.Cache implements it.
type Forecasts interface {
	Peek(key cache.Key) (forecast.Forecast, bool)
	Get(ctx context.Context, key cache.Key) (forecast.Forecast, error)
}

var _ Forecasts = (*cache.Cache)(nil)

// Locator maps a cloud region to a zone: ENOTFOUND for an unknown region
// (or provider), EINFEASIBLE for a known region that maps to no zone.
type Locator interface {
	Locate(provider, region string) (forecast.Zone, error)
}

// Config configures a Service.
type Config struct {
	Forecasts Forecasts                // required
	Known     func(forecast.Zone) bool // required: zones with history or climatology
	Locator   Locator                  // nil: requests with locations are EINVALID
	Catalog   func() []ZoneInfo        // nil: Zones returns nothing
	Clock     clock.Clock              // required
	Horizon   time.Duration            // forecast length; default DefaultHorizon, whole hours
	Step      time.Duration            // default step of the window search; default DefaultStep, at least MinStep
	// Signals are the signals served; nil: forecast.Signals. A request for
	// another one (the marginal signal where no vendor forecasts it) is
	// EINVALID naming "signal".
	Signals []forecast.Signal
	// ZoneCap, when its Share is set, steers a decision away from a zone
	// that already holds more than Share of the decisions of the last
	// Window (and at least MinCount of them), to the best feasible zone
	// under the cap; the clock defaults to Clock. Zero: off.
	ZoneCap guard.Config
}

// Service answers scheduling and forecast requests. Safe for concurrent use.
type Service struct {
	cfg     Config
	cap     *guard.Guard // nil: no zone cap
	scratch sync.Pool    // of *scratch
}

// scratch is the per-request working space of Schedule, recycled because
// none of it outlives the call.
type scratch struct {
	fcs  []forecast.Forecast
	errs []error
	sc   []forecast.Candidate
}

// maxScratch bounds the candidates whose scratch is kept for reuse.
const maxScratch = MaxCandidates + 1

func (s *Service) getScratch(n int) *scratch {
	sp, _ := s.scratch.Get().(*scratch)
	if sp == nil {
		sp = new(scratch)
	}
	sp.fcs = slices.Grow(sp.fcs[:0], n)[:n]
	sp.errs = slices.Grow(sp.errs[:0], n)[:n]
	sp.sc = slices.Grow(sp.sc[:0], n)
	return sp
}

func (s *Service) putScratch(sp *scratch) {
	if cap(sp.fcs) > maxScratch || cap(sp.sc) > maxScratch {
		return
	}
	clear(sp.fcs)
	clear(sp.errs)
	clear(sp.sc[:cap(sp.sc)])
	s.scratch.Put(sp)
}

// New validates cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	if cfg.Forecasts == nil || cfg.Known == nil || cfg.Clock == nil {
		return nil, forecast.Errorf(forecast.EINVALID, "gateway: Forecasts, Known and Clock are required")
	}
	if cfg.Horizon == 0 {
		cfg.Horizon = DefaultHorizon
	}
	if cfg.Horizon < forecast.Hour || cfg.Horizon%forecast.Hour != 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "horizon", "horizon must be a positive whole number of hours, got %v", cfg.Horizon)
	}
	if cfg.Step == 0 {
		cfg.Step = DefaultStep
	}
	if cfg.Step < MinStep || cfg.Step > cfg.Horizon {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "step", "step must be between %v and the horizon %v, got %v", MinStep, cfg.Horizon, cfg.Step)
	}
	if cfg.ZoneCap.Now == nil {
		cfg.ZoneCap.Now = cfg.Clock.Now
	}
	g, err := guard.New(cfg.ZoneCap)
	if err != nil {
		return nil, err
	}
	return &Service{cfg: cfg, cap: g}, nil
}

// Horizon returns the forecast horizon.
func (s *Service) Horizon() time.Duration { return s.cfg.Horizon }

// Now reads the service's clock.
func (s *Service) Now() Reading {
	return Reading{Mode: s.cfg.Clock.Mode(), Now: s.cfg.Clock.Now()}
}

// Zones lists the zones the gateway can forecast, by zone id.
func (s *Service) Zones() []ZoneInfo {
	if s.cfg.Catalog == nil {
		return nil
	}
	zs := s.cfg.Catalog()
	slices.SortFunc(zs, func(a, b ZoneInfo) int { return strings.Compare(string(a.Zone), string(b.Zone)) })
	return zs
}

// checkSignal returns EINVALID naming "signal" for a signal not served.
func (s *Service) checkSignal(signal forecast.Signal) error {
	if s.cfg.Signals == nil && slices.Contains(forecast.Signals[:], signal) || slices.Contains(s.cfg.Signals, signal) {
		return nil
	}
	return forecast.FieldErrorf(forecast.EINVALID, "signal", "signal %s is not served here: the marginal signal needs a vendor that forecasts it (WattTime, see docs/vendors.md)", signal)
}

// Forecast returns the current forecast of zone. Errors: EINVALID "zone"
// for an unknown zone, EINVALID "signal" for a signal not served; the
// forecast's own errors otherwise.
func (s *Service) Forecast(ctx context.Context, zone forecast.Zone, signal forecast.Signal) (forecast.Forecast, Reading, error) {
	now := s.Now()
	if signal == "" {
		signal = forecast.SignalLifecycle
	}
	if err := s.checkSignal(signal); err != nil {
		return forecast.Forecast{}, now, err
	}
	if !s.cfg.Known(zone) {
		return forecast.Forecast{}, now, forecast.FieldErrorf(forecast.EINVALID, "zone", "unknown zone %s", zone)
	}
	fc, err := s.cfg.Forecasts.Get(ctx, cache.Key{Zone: zone, Signal: signal})
	return fc, now, err
}

// Schedule finds the window with the lowest mean intensity for req. With a
// zone cap (Config.ZoneCap) the decision is the best window of the best
// zone under the cap, and Decision.Capped names the better zones skipped;
// Alternatives stay the best window of every zone, best first.
//
// Errors are *forecast.Error with Field set: EINVALID for a malformed or
// unknown field (unknown zones and regions are all named in one message),
// EINFEASIBLE when no candidate has a window that satisfies the request
// (the message gives each zone's reason), EUNAVAILABLE when no candidate
// could be forecast; or ctx's error.
func (s *Service) Schedule(ctx context.Context, req Request) (Decision, error) {
	now := s.Now()
	q, err := s.query(req, now.Now)
	if err != nil {
		return Decision{}, err
	}
	cands, located, err := s.candidates(req)
	if err != nil {
		return Decision{}, err
	}
	signal := req.Signal
	if signal == "" {
		signal = forecast.SignalLifecycle
	}
	if err := s.checkSignal(signal); err != nil {
		return Decision{}, err
	}
	origin := req.Origin
	if origin == "" {
		origin = cands[0]
	} else if !s.cfg.Known(origin) {
		return Decision{}, forecast.FieldErrorf(forecast.EINVALID, "origin", "unknown zone %s", origin)
	}

	zones := cands
	if !slices.Contains(cands, origin) {
		zones = append(cands, origin) // cands has room: see candidates
	}
	sp := s.getScratch(len(zones))
	defer s.putScratch(sp)
	fcs, errs := sp.fcs, sp.errs
	s.fetch(ctx, zones, signal, fcs, errs)
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}

	d := Decision{Signal: signal, Clock: now, Provenance: make(map[forecast.Zone]forecast.Provenance, len(zones))}
	var failed []forecast.ZoneReason
	sc := sp.sc
	for i, z := range zones {
		if errs[i] != nil {
			if i < len(cands) {
				failed = append(failed, forecast.ZoneReason{Zone: z, Reason: "no forecast: " + forecast.ErrorMessage(errs[i])})
			}
			continue
		}
		d.Provenance[z] = fcs[i].Provenance
		if i < len(cands) {
			sc = append(sc, forecast.Candidate{Zone: z, Series: fcs[i].Series})
		}
	}
	if len(sc) == 0 {
		code := forecast.EINFEASIBLE // every zone lacks a forecaster for the signal: ask another
		for _, e := range errs[:len(cands)] {
			if e != nil && forecast.ErrorCode(e) != forecast.EINFEASIBLE {
				code = forecast.EUNAVAILABLE
			}
		}
		return Decision{}, &forecast.Error{Code: code, Field: "zones",
			Message: "no candidate zone could be forecast: " + joinReasons(failed)}
	}
	res, err := forecast.Search(q, sc)
	if err != nil {
		if forecast.ErrorCode(err) == forecast.EINFEASIBLE && len(failed) > 0 && forecast.ErrorField(err) == "zones" {
			all := append(slices.Clip(res.Infeasible), failed...)
			sortReasons(all)
			return Decision{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "zones", "no zone has a feasible window: %s", joinReasons(all))
		}
		return Decision{}, err
	}
	best := res.Best
	if s.cap != nil {
		ranked := make([]forecast.Zone, len(res.PerZone))
		for i, w := range res.PerZone {
			ranked[i] = w.Zone
		}
		i, capped := s.cap.Admit(ranked)
		best, d.Capped = res.PerZone[i], capped
	}
	d.Decision = placement(best, located)
	d.Alternatives = make([]Placement, len(res.PerZone))
	for i, w := range res.PerZone {
		d.Alternatives[i] = placement(w, located)
	}
	d.Infeasible = append(res.Infeasible, failed...)
	sortReasons(d.Infeasible)

	oi := slices.Index(zones, origin)
	if errs[oi] == nil {
		if m, err := forecast.MeanOver(fcs[oi].Series, q.EarliestStart, q.Duration); err == nil {
			start := q.EarliestStart.UTC()
			d.Baseline = &Placement{Zone: origin, Location: located[origin], Start: start, End: start.Add(q.Duration), Mean: m}
			sv := 0.0
			if m > 0 {
				sv = (m - best.Mean) / m * 100
			}
			d.SavingsPct = &sv
		}
	}
	if req.Power != nil {
		d.Energy = withEmissions(&d, q.Duration, *req.Power)
	}
	return d, nil
}

// withEmissions returns the energy of a job of power p running for dur,
// and sets the emissions of each of d's placements; the savings in grams
// need d's baseline.
func withEmissions(d *Decision, dur time.Duration, p Power) *Energy {
	e := energyOf(p, dur)
	d.Decision.EmissionsG = d.Decision.Mean * e.KWh
	for i := range d.Alternatives {
		d.Alternatives[i].EmissionsG = d.Alternatives[i].Mean * e.KWh
	}
	if d.Baseline != nil {
		d.Baseline.EmissionsG = d.Baseline.Mean * e.KWh
		sv := d.Baseline.EmissionsG - d.Decision.EmissionsG
		e.SavingsG = &sv
	}
	return e
}

// query validates the timing fields of req against now and the horizon.
func (s *Service) query(req Request, now time.Time) (forecast.Query, error) {
	if req.Duration <= 0 {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINVALID, "duration", "duration must be positive, got %v", req.Duration)
	}
	if req.Duration > s.cfg.Horizon {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINVALID, "duration", "duration %v is longer than the forecast horizon %v", req.Duration, s.cfg.Horizon)
	}
	step := req.Step
	if step == 0 {
		step = s.cfg.Step
	}
	if step < MinStep {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINVALID, "step", "step must be at least %v, got %v", MinStep, step)
	}
	if step > s.cfg.Horizon {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINVALID, "step", "step %v is longer than the forecast horizon %v", step, s.cfg.Horizon)
	}
	// A job cannot start in the past: an absent or past earliest start is
	// now, rounded up to the second.
	earliest := req.EarliestStart.UTC()
	if earliest.IsZero() || earliest.Before(now) {
		earliest = now.UTC().Truncate(time.Second)
		if earliest.Before(now) {
			earliest = earliest.Add(time.Second)
		}
	}
	if !req.Deadline.IsZero() && req.Deadline.Before(earliest.Add(req.Duration)) {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "deadline",
			"deadline %s is before the earliest start %s + duration %v = %s",
			stamp(req.Deadline), stamp(earliest), req.Duration, stamp(earliest.Add(req.Duration)))
	}
	if end := forecast.HourFloor(now).Add(s.cfg.Horizon); earliest.Add(req.Duration).After(end) {
		return forecast.Query{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "earliest_start",
			"a %v job starting at %s ends at %s, after the forecast horizon ends at %s",
			req.Duration, stamp(earliest), stamp(earliest.Add(req.Duration)), stamp(end))
	}
	return forecast.Query{Duration: req.Duration, EarliestStart: earliest, Deadline: req.Deadline.UTC(), Step: step}, nil
}

// candidates returns the distinct candidate zones in request order (zones,
// then locations), with room for one more, and, per zone mapped from
// locations, the first of its locations by (provider, region).
func (s *Service) candidates(req Request) ([]forecast.Zone, map[forecast.Zone]*Location, error) {
	if n := len(req.Zones) + len(req.Locations); n == 0 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "no candidates: give zones, locations or both")
	} else if n > MaxCandidates {
		field := "zones"
		if len(req.Locations) > len(req.Zones) {
			field = "locations"
		}
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, field, "%d candidates; at most %d", n, MaxCandidates)
	}
	n := len(req.Zones) + len(req.Locations)
	zones := make([]forecast.Zone, 0, n+1)
	// A few candidates are told apart by a scan, more by a map.
	var seen map[forecast.Zone]bool
	if n > 16 {
		seen = make(map[forecast.Zone]bool, n)
	}
	add := func(z forecast.Zone) {
		if seen == nil {
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		} else if !seen[z] {
			seen[z] = true
			zones = append(zones, z)
		}
	}
	var unknown []string
	for _, z := range req.Zones {
		if !s.cfg.Known(z) {
			unknown = append(unknown, string(z))
			continue
		}
		add(z)
	}
	if len(unknown) > 0 {
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, "zones", "unknown zone(s): %s", strings.Join(unknown, ", "))
	}
	var located map[forecast.Zone]*Location
	var bad, noData []string
	for _, l := range req.Locations {
		if s.cfg.Locator == nil {
			bad = append(bad, l.String()+" (no region table)")
			continue
		}
		z, err := s.cfg.Locator.Locate(l.Provider, l.Region)
		if forecast.ErrorCode(err) == forecast.EINFEASIBLE {
			noData = append(noData, fmt.Sprintf("%s (%s)", l, forecast.ErrorMessage(err)))
			continue
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s (%s)", l, forecast.ErrorMessage(err)))
			continue
		}
		if !s.cfg.Known(z) {
			noData = append(noData, fmt.Sprintf("%s (maps to zone %s, which has no data and no climatology)", l, z))
			continue
		}
		if located == nil {
			located = make(map[forecast.Zone]*Location)
		}
		if cur := located[z]; cur == nil || cmp.Or(strings.Compare(l.Provider, cur.Provider), strings.Compare(l.Region, cur.Region)) < 0 {
			located[z] = &l
		}
		add(z)
	}
	if len(bad) > 0 {
		msg := "unknown region(s): " + strings.Join(bad, "; ")
		if len(noData) > 0 {
			msg += "; and known region(s) without zone data: " + strings.Join(noData, "; ")
		}
		return nil, nil, forecast.FieldErrorf(forecast.EINVALID, "locations", "%s", msg)
	}
	if len(noData) > 0 {
		return nil, nil, forecast.FieldErrorf(forecast.EINFEASIBLE, "locations", "known region(s) without zone data: %s", strings.Join(noData, "; "))
	}
	return zones, located, nil
}

// fetch sets fcs[i] or errs[i] to the forecast of zones[i] or why there is
// none: cache hits directly, misses concurrently.
func (s *Service) fetch(ctx context.Context, zones []forecast.Zone, signal forecast.Signal, fcs []forecast.Forecast, errs []error) {
	var wg sync.WaitGroup
	for i, z := range zones {
		k := cache.Key{Zone: z, Signal: signal}
		if fc, ok := s.cfg.Forecasts.Peek(k); ok {
			fcs[i] = fc
			continue
		}
		wg.Go(func() { fcs[i], errs[i] = s.cfg.Forecasts.Get(ctx, k) })
	}
	wg.Wait()
}

func placement(w forecast.Window, located map[forecast.Zone]*Location) Placement {
	return Placement{Zone: w.Zone, Location: located[w.Zone], Start: w.Start.UTC(), End: w.End.UTC(), Mean: w.Mean}
}

func sortReasons(rs []forecast.ZoneReason) {
	slices.SortFunc(rs, func(a, b forecast.ZoneReason) int { return strings.Compare(string(a.Zone), string(b.Zone)) })
}

func joinReasons(rs []forecast.ZoneReason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r.Zone) + ": " + r.Reason
	}
	return strings.Join(parts, "; ")
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
