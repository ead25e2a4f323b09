package gateway_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/cache"
)

// now is the fixed clock of these tests: 10:17:30, so the forecasts start
// at 10:00 and the earliest start is now itself.
var now = time.Date(2021, 6, 1, 10, 17, 30, 0, time.UTC)

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
func (c fixedClock) Mode() string   { return "test" }

// table is a Forecasts over fixed series; zones absent from it fail.
type table map[forecast.Zone][]float64

func (t table) fc(k cache.Key) (forecast.Forecast, bool) {
	v, ok := t[k.Zone]
	if !ok {
		return forecast.Forecast{}, false
	}
	issue := forecast.HourFloor(now)
	return forecast.Forecast{Zone: k.Zone, Signal: k.Signal, Series: forecast.Series{Start: issue, Values: v},
		Provenance: forecast.Provenance{Model: "m-" + string(k.Zone), Source: forecast.SourceZone, IssuedAt: issue}}, true
}

func (t table) Peek(k cache.Key) (forecast.Forecast, bool) { return t.fc(k) }

func (t table) Get(_ context.Context, k cache.Key) (forecast.Forecast, error) {
	if fc, ok := t.fc(k); ok {
		return fc, nil
	}
	return forecast.Forecast{}, forecast.Errorf(forecast.EUNAVAILABLE, "no model for %s", k.Zone)
}

type locator map[gateway.Location]forecast.Zone

func (l locator) Locate(p, r string) (forecast.Zone, error) {
	if r == "chinanorth" {
		return "", forecast.Errorf(forecast.EINFEASIBLE, "azure region %s is known but has no grid zone", r)
	}
	z, ok := l[gateway.Location{Provider: p, Region: r}]
	if !ok {
		return "", forecast.Errorf(forecast.ENOTFOUND, "unknown %s region %q", p, r)
	}
	return z, nil
}

func newService(t testing.TB, tab table, known ...forecast.Zone) *gateway.Service {
	t.Helper()
	svc, err := gateway.New(gateway.Config{
		Forecasts: tab,
		Known: func(z forecast.Zone) bool {
			_, ok := tab[z]
			return ok || slices.Contains(known, z)
		},
		Locator: locator{
			{Provider: "gcp", Region: "europe-west3"}: "DE",
			{Provider: "aws", Region: "eu-central-1"}: "DE",
			{Provider: "aws", Region: "eu-north-1"}:   "SE",
			{Provider: "aws", Region: "af-south-1"}:   "ZA",
		},
		Clock:   fixedClock{now},
		Horizon: 96 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// bruteForce is an independent reference: every candidate start (the
// earliest start, then every multiple of step after it) of every zone, the
// mean integrated minute by minute where hours are split, ties broken by
// start then zone id.
func bruteForce(tab table, zones []forecast.Zone, earliest, deadline time.Time, d, step time.Duration) (forecast.Window, bool) {
	issue := forecast.HourFloor(now)
	var best forecast.Window
	found := false
	for _, z := range zones {
		vals := tab[z]
		end := issue.Add(time.Duration(len(vals)) * time.Hour)
		if !deadline.IsZero() && deadline.Before(end) {
			end = deadline
		}
		starts := []time.Time{earliest}
		for s := earliest.Truncate(step).Add(step); ; s = s.Add(step) {
			if s.Add(d).After(end) {
				break
			}
			starts = append(starts, s)
		}
		for _, s := range starts {
			if s.Add(d).After(end) {
				continue
			}
			// Integrate over the breakpoints: s, every hour boundary inside, s+d.
			sum := 0.0
			for a := s; a.Before(s.Add(d)); {
				b := a.Truncate(time.Hour).Add(time.Hour)
				if b.After(s.Add(d)) {
					b = s.Add(d)
				}
				sum += vals[int(a.Sub(issue)/time.Hour)] * b.Sub(a).Hours()
				a = b
			}
			m := sum / d.Hours()
			w := forecast.Window{Zone: z, Start: s, End: s.Add(d), Mean: m}
			if !found {
				best, found = w, true
				continue
			}
			tie := math.Abs(m-best.Mean) <= 1e-9*math.Max(math.Abs(m), math.Abs(best.Mean))
			if !tie && m < best.Mean || tie && (s.Before(best.Start) || s.Equal(best.Start) && z < best.Zone) {
				best = w
			}
		}
	}
	return best, found
}

func randomSeries(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Round(50 + 500*r.Float64())
	}
	return v
}

func TestScheduleMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	zones := []forecast.Zone{"DE", "SE", "PL", "ES", "NL"}
	for i := range 40 {
		tab := table{}
		for _, z := range zones {
			tab[z] = randomSeries(r, 96)
		}
		d := time.Duration(1+r.IntN(600)) * time.Minute
		step := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour}[r.IntN(4)]
		var deadline time.Time
		if r.IntN(2) == 0 {
			deadline = now.Add(d + time.Duration(r.IntN(48*60))*time.Minute)
		}
		t.Run(fmt.Sprintf("case%02d_%v_step%v", i, d, step), func(t *testing.T) {
			t.Parallel()
			svc := newService(t, tab)
			got, err := svc.Schedule(context.Background(), gateway.Request{Zones: zones, Duration: d, Deadline: deadline, Step: step})
			if err != nil {
				t.Fatal(err)
			}
			want, _ := bruteForce(tab, zones, now, deadline, d, step)
			if got.Decision.Zone != want.Zone || !got.Decision.Start.Equal(want.Start) || math.Abs(got.Decision.Mean-want.Mean) > 1e-6 {
				t.Fatalf("decision=%+v, want %+v", got.Decision, want)
			}
			if !got.Decision.End.Equal(got.Decision.Start.Add(d)) {
				t.Fatalf("end=%v, want start+%v", got.Decision.End, d)
			}
			if !deadline.IsZero() && got.Decision.End.After(deadline) {
				t.Fatalf("decision ends %v after the deadline %v", got.Decision.End, deadline)
			}
			if got, want := len(got.Alternatives), len(zones); got != want {
				t.Fatalf("%d alternatives, want %d", got, want)
			}
			for _, a := range got.Alternatives {
				w, _ := bruteForce(tab, []forecast.Zone{a.Zone}, now, deadline, d, step)
				if !a.Start.Equal(w.Start) || math.Abs(a.Mean-w.Mean) > 1e-6 {
					t.Fatalf("alternative %+v, want %+v", a, w)
				}
			}
		})
	}
}

func TestScheduleSemantics(t *testing.T) {
	t.Parallel()
	flat := func(v float64) []float64 {
		s := make([]float64, 96)
		for i := range s {
			s[i] = v
		}
		return s
	}
	dip := func(base, low float64, from, to int) []float64 {
		s := flat(base)
		for i := from; i < to; i++ {
			s[i] = low
		}
		return s
	}
	tests := []struct {
		name         string
		tab          table
		req          gateway.Request
		wantZone     forecast.Zone
		wantStart    time.Time
		wantLocation *gateway.Location
		wantBaseline forecast.Zone
		wantSavings  float64
		wantInfeas   []forecast.Zone
	}{
		{name: "tie across zones: earliest start, then zone id",
			tab: table{"SE": flat(100), "DE": flat(100)}, req: gateway.Request{Zones: []forecast.Zone{"SE", "DE"}, Duration: 3 * time.Hour},
			wantZone: "DE", wantStart: now, wantBaseline: "SE", wantSavings: 0},
		{name: "tie within a zone: earliest start",
			tab: table{"DE": dip(300, 100, 20, 30)}, req: gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: 2 * time.Hour},
			wantZone: "DE", wantStart: forecast.HourFloor(now).Add(20 * time.Hour), wantBaseline: "DE", wantSavings: 100 * (300 - 100) / 300.0},
		{name: "deadline excludes the dip",
			tab:      table{"DE": dip(300, 100, 20, 30), "SE": flat(200)},
			req:      gateway.Request{Zones: []forecast.Zone{"DE", "SE"}, Duration: 2 * time.Hour, Deadline: forecast.HourFloor(now).Add(21 * time.Hour)},
			wantZone: "SE", wantStart: now, wantBaseline: "DE", wantSavings: 100 * (300 - 200) / 300.0},
		{name: "deadline is a completion deadline: the window ends exactly at it",
			tab:      table{"DE": dip(300, 100, 20, 30)},
			req:      gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: 2 * time.Hour, Deadline: forecast.HourFloor(now).Add(22 * time.Hour)},
			wantZone: "DE", wantStart: forecast.HourFloor(now).Add(20 * time.Hour), wantBaseline: "DE", wantSavings: 100 * (300 - 100) / 300.0},
		{name: "origin outside the candidates sets the baseline",
			tab:      table{"DE": flat(400), "SE": flat(40), "FR": flat(50)},
			req:      gateway.Request{Zones: []forecast.Zone{"DE", "SE"}, Duration: time.Hour, Origin: "FR"},
			wantZone: "SE", wantStart: now, wantBaseline: "FR", wantSavings: 100 * (50 - 40) / 50.0},
		{name: "locations: several regions in one zone name the first by provider, region",
			tab:      table{"DE": flat(100), "SE": flat(200)},
			req:      gateway.Request{Locations: []gateway.Location{{Provider: "gcp", Region: "europe-west3"}, {Provider: "aws", Region: "eu-north-1"}, {Provider: "aws", Region: "eu-central-1"}}, Duration: time.Hour},
			wantZone: "DE", wantStart: now, wantLocation: &gateway.Location{Provider: "aws", Region: "eu-central-1"}, wantBaseline: "DE", wantSavings: 0},
		{name: "zones and locations together, duplicates merged",
			tab:      table{"DE": flat(300), "SE": flat(200)},
			req:      gateway.Request{Zones: []forecast.Zone{"DE", "DE"}, Locations: []gateway.Location{{Provider: "aws", Region: "eu-north-1"}}, Duration: time.Hour},
			wantZone: "SE", wantStart: now, wantLocation: &gateway.Location{Provider: "aws", Region: "eu-north-1"}, wantBaseline: "DE", wantSavings: 100 * (300 - 200) / 300.0},
		{name: "a zone whose forecast fails is infeasible, the others decide",
			tab: table{"DE": flat(300)}, req: gateway.Request{Zones: []forecast.Zone{"XX", "DE"}, Duration: time.Hour},
			wantZone: "DE", wantStart: now, wantBaseline: "", wantInfeas: []forecast.Zone{"XX"}},
		{name: "past earliest start means now",
			tab: table{"DE": flat(100)}, req: gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: time.Hour, EarliestStart: now.Add(-5 * time.Hour)},
			wantZone: "DE", wantStart: now, wantBaseline: "DE"},
		{name: "later earliest start is kept, off the step grid",
			tab: table{"DE": flat(100)}, req: gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: time.Hour, EarliestStart: now.Add(2*time.Hour + 7*time.Second)},
			wantZone: "DE", wantStart: now.Add(2*time.Hour + 7*time.Second), wantBaseline: "DE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t, tt.tab, "XX")
			d, err := svc.Schedule(context.Background(), tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision.Zone != tt.wantZone || !d.Decision.Start.Equal(tt.wantStart) {
				t.Fatalf("decision=%s at %v, want %s at %v", d.Decision.Zone, d.Decision.Start, tt.wantZone, tt.wantStart)
			}
			if (d.Decision.Location == nil) != (tt.wantLocation == nil) || tt.wantLocation != nil && *d.Decision.Location != *tt.wantLocation {
				t.Fatalf("location=%v, want %v", d.Decision.Location, tt.wantLocation)
			}
			if tt.wantBaseline != "" {
				if d.Baseline == nil || d.Baseline.Zone != tt.wantBaseline || !d.Baseline.Start.Equal(d.Clock.Now) && tt.req.EarliestStart.IsZero() {
					t.Fatalf("baseline=%+v, want zone %s at now", d.Baseline, tt.wantBaseline)
				}
				if d.SavingsPct == nil || math.Abs(*d.SavingsPct-tt.wantSavings) > 1e-9 {
					t.Fatalf("savings=%v, want %v", d.SavingsPct, tt.wantSavings)
				}
			}
			var infeas []forecast.Zone
			for _, r := range d.Infeasible {
				infeas = append(infeas, r.Zone)
			}
			if !slices.Equal(infeas, tt.wantInfeas) {
				t.Fatalf("infeasible=%v, want %v", d.Infeasible, tt.wantInfeas)
			}
			if got, want := d.Clock.Mode, "test"; got != want {
				t.Fatalf("clock=%q, want %q", got, want)
			}
			if _, ok := d.Provenance[d.Decision.Zone]; !ok {
				t.Fatalf("no provenance for the decision's zone %s", d.Decision.Zone)
			}
		})
	}
}

func TestScheduleErrors(t *testing.T) {
	t.Parallel()
	flat := make([]float64, 96)
	for i := range flat {
		flat[i] = 100
	}
	tab := table{"DE": flat, "SE": flat}
	many := make([]forecast.Zone, gateway.MaxCandidates+1)
	for i := range many {
		many[i] = "DE"
	}
	ok := gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: time.Hour}
	with := func(f func(*gateway.Request)) gateway.Request { r := ok; f(&r); return r }
	tests := []struct {
		name, code, field string
		req               gateway.Request
		mention           []string
	}{
		{"zero duration", forecast.EINVALID, "duration", with(func(r *gateway.Request) { r.Duration = 0 }), nil},
		{"negative duration", forecast.EINVALID, "duration", with(func(r *gateway.Request) { r.Duration = -time.Hour }), nil},
		{"duration over the horizon", forecast.EINVALID, "duration", with(func(r *gateway.Request) { r.Duration = 97 * time.Hour }), []string{"horizon"}},
		{"step too small", forecast.EINVALID, "step", with(func(r *gateway.Request) { r.Step = 30 * time.Second }), nil},
		{"deadline before earliest start + duration", forecast.EINFEASIBLE, "deadline", with(func(r *gateway.Request) { r.Deadline = now.Add(30 * time.Minute) }), []string{"deadline"}},
		{"deadline in the past", forecast.EINFEASIBLE, "deadline", with(func(r *gateway.Request) { r.Deadline = now.Add(-time.Hour) }), nil},
		{"window past the horizon", forecast.EINFEASIBLE, "earliest_start", with(func(r *gateway.Request) { r.EarliestStart = now.Add(95 * time.Hour) }), []string{"horizon"}},
		{"no candidates", forecast.EINVALID, "zones", with(func(r *gateway.Request) { r.Zones = nil }), nil},
		{"too many candidates", forecast.EINVALID, "zones", with(func(r *gateway.Request) { r.Zones = many }), []string{"256"}},
		{"unknown zones are all named", forecast.EINVALID, "zones", with(func(r *gateway.Request) { r.Zones = []forecast.Zone{"DE", "QQ", "ZZ"} }), []string{"QQ", "ZZ"}},
		{"unknown origin", forecast.EINVALID, "origin", with(func(r *gateway.Request) { r.Origin = "QQ" }), []string{"QQ"}},
		{"unknown and unmapped regions are all named", forecast.EINVALID, "locations", with(func(r *gateway.Request) {
			r.Locations = []gateway.Location{{Provider: "aws", Region: "mars-1"}, {Provider: "azure", Region: "chinanorth"}, {Provider: "aws", Region: "af-south-1"}}
		}), []string{"unknown region(s): aws/mars-1", "azure/chinanorth", "aws/af-south-1"}},
		{"known regions without zone data are 422, not unknown", forecast.EINFEASIBLE, "locations", with(func(r *gateway.Request) {
			r.Locations = []gateway.Location{{Provider: "azure", Region: "chinanorth"}, {Provider: "aws", Region: "af-south-1"}}
		}), []string{"known region(s) without zone data", "azure/chinanorth (azure region chinanorth is known but has no grid zone)", "aws/af-south-1 (maps to zone"}},
		{"every candidate fails to forecast", forecast.EUNAVAILABLE, "zones", with(func(r *gateway.Request) { r.Zones = []forecast.Zone{"XX"} }), []string{"XX"}},
		{"the marginal signal without a vendor", forecast.EINVALID, "signal", with(func(r *gateway.Request) { r.Signal = forecast.SignalMarginal }), []string{"marginal", "vendor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t, tab, "XX")
			_, err := svc.Schedule(context.Background(), tt.req)
			if got := forecast.ErrorCode(err); got != tt.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tt.code)
			}
			if got := forecast.ErrorField(err); got != tt.field {
				t.Fatalf("field=%q (%v), want %q", got, err, tt.field)
			}
			for _, m := range tt.mention {
				if !strings.Contains(forecast.ErrorMessage(err), m) {
					t.Fatalf("message %q does not mention %q", forecast.ErrorMessage(err), m)
				}
			}
		})
	}
}

func TestScheduleCanceled(t *testing.T) {
	t.Parallel()
	svc := newService(t, table{}, "DE")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.Schedule(ctx, gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: time.Hour}); err != context.Canceled {
		t.Fatalf("err=%v, want context.Canceled", err)
	}
}

// The marginal signal is served only where Config.Signals lists it (a
// vendor forecasts it); elsewhere it is EINVALID naming signal.
func TestSignals(t *testing.T) {
	t.Parallel()
	flat := make([]float64, 96)
	for i := range flat {
		flat[i] = 100
	}
	tab := table{"DE": flat}
	for _, signals := range [][]forecast.Signal{nil, {forecast.SignalLifecycle, forecast.SignalDirect, forecast.SignalMarginal}} {
		svc, err := gateway.New(gateway.Config{Forecasts: tab, Known: func(z forecast.Zone) bool { return z == "DE" }, Clock: fixedClock{now}, Signals: signals})
		if err != nil {
			t.Fatal(err)
		}
		served := slices.Contains(signals, forecast.SignalMarginal)
		_, _, err = svc.Forecast(context.Background(), "DE", forecast.SignalMarginal)
		_, serr := svc.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"DE"}, Duration: time.Hour, Signal: forecast.SignalMarginal})
		for _, err := range []error{err, serr} {
			if served && err != nil || !served && (forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "signal") {
				t.Fatalf("signals %v: marginal answered %v", signals, err)
			}
		}
		if _, _, err := svc.Forecast(context.Background(), "DE", forecast.SignalDirect); err != nil {
			t.Fatalf("signals %v: direct answered %v", signals, err)
		}
	}
}
