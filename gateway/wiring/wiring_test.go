package wiring

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/models/workflow"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

var replayStart = time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)

type fixed struct{ t time.Time }

func (c fixed) Now() time.Time { return c.t }
func (c fixed) Mode() string   { return "replay" }

func newGateway(t testing.TB, cfg Config) *Gateway {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = fixed{replayStart}
	}
	g, err := NewBundled(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// step forecasters for TestProvenanceSources.
type constant struct {
	v          float64
	failFor    forecast.Zone
	blockFor   forecast.Zone
	model, ver string
}

func (c constant) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	switch req.Zone {
	case c.failFor:
		return forecast.Forecast{}, forecast.Errorf(forecast.EUNAVAILABLE, "model not ready")
	case c.blockFor:
		<-ctx.Done()
		return forecast.Forecast{}, ctx.Err()
	}
	v := make([]float64, req.Horizon)
	for i := range v {
		v[i] = c.v
	}
	return forecast.Forecast{Series: forecast.Series{Start: req.Start, Values: v},
		Provenance: forecast.Provenance{Model: c.model, Version: c.ver}}, nil
}

func TestProvenanceSources(t *testing.T) {
	t.Parallel()
	zoneModel := constant{v: 100, failFor: "PL", blockFor: "SE", model: "zone-model", ver: "7"}
	generic := constant{v: 200, failFor: "PL", model: "generic-model", ver: "3"}
	g := newGateway(t, Config{
		ModelTimeout: 50 * time.Millisecond,
		Forecasters: func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
			switch z {
			case "":
				return generic
			case "DE", "SE", "PL":
				return zoneModel
			}
			return nil
		},
	})
	tests := []struct {
		zone       forecast.Zone
		wantSource forecast.Source
		wantModel  string
		wantReason string
	}{
		{"DE", forecast.SourceZone, "zone-model", ""},
		{"SE", forecast.SourceGeneric, "generic-model", "zone: timed out after 50ms"},
		{"PL", forecast.SourceBaseline, "seasonal-naive", "generic: unavailable: model not ready"},
		{"FR", forecast.SourceClimatology, "climatology", "baseline: no baseline forecaster for FR"},
	}
	d, err := g.Service.Schedule(context.Background(), gateway.Request{
		Zones: []forecast.Zone{"DE", "SE", "PL", "FR"}, Duration: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(string(tt.zone), func(t *testing.T) {
			p, ok := d.Provenance[tt.zone]
			if !ok {
				t.Fatalf("no provenance for %s", tt.zone)
			}
			if p.Source != tt.wantSource || p.Model != tt.wantModel {
				t.Fatalf("source=%q model=%q, want %q %q (reason %q)", p.Source, p.Model, tt.wantSource, tt.wantModel, p.Reason)
			}
			if !strings.Contains(p.Reason, tt.wantReason) || tt.wantReason == "" && p.Reason != "" {
				t.Fatalf("reason=%q, want %q", p.Reason, tt.wantReason)
			}
			if !p.IssuedAt.Equal(replayStart) {
				t.Fatalf("issued_at=%v, want %v", p.IssuedAt, replayStart)
			}
		})
	}
}

// TestClimatologyOfTheSignalAsked: a zone with no history answers the
// lifecycle signal with its annual lifecycle figure, the provenance naming
// its source, column and year; asked for the direct signal, which no
// bundled annual figure measures, it is listed as not forecast, saying so,
// never answered with the lifecycle figure.
func TestClimatologyOfTheSignalAsked(t *testing.T) {
	t.Parallel()
	g := newGateway(t, Config{})
	tbl, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	want, ok := tbl.ClimatologyOf("FR", forecast.SignalLifecycle)
	if !ok {
		t.Fatal("FR has no lifecycle climatology")
	}
	d, err := g.Service.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"DE", "FR"}, Duration: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Provenance["FR"]
	if p.Source != forecast.SourceClimatology || p.Version != fmt.Sprintf("%s:%d", regions.ClimatologySource, want.Year) {
		t.Errorf("FR lifecycle provenance %+v", p)
	}
	d, err = g.Service.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"DE", "FR"}, Duration: time.Hour, Signal: forecast.SignalDirect})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Provenance["FR"]; ok {
		t.Errorf("FR answered the direct signal: %+v", d.Provenance["FR"])
	}
	var reason string
	for _, r := range d.Infeasible {
		if r.Zone == "FR" {
			reason = r.Reason
		}
	}
	if !strings.Contains(reason, "no forecast") || !strings.Contains(reason, "climatology") {
		t.Errorf("FR under the direct signal: reason %q, want it listed as not forecast", reason)
	}
	// FR alone: not an outage (503) but a request no step can answer (422).
	_, err = g.Service.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"FR"}, Duration: time.Hour, Signal: forecast.SignalDirect})
	if forecast.ErrorCode(err) != forecast.EINFEASIBLE || !strings.Contains(forecast.ErrorMessage(err), "no direct forecast for FR") {
		t.Errorf("FR alone under the direct signal: %v, want EINFEASIBLE saying no direct forecast", err)
	}
}

func TestUnknownZone(t *testing.T) {
	t.Parallel()
	g := newGateway(t, Config{})
	_, err := g.Service.Schedule(context.Background(), gateway.Request{Zones: []forecast.Zone{"DE", "NOWHERE"}, Duration: time.Hour})
	if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(forecast.ErrorMessage(err), "NOWHERE") {
		t.Fatalf("err=%v, want EINVALID naming NOWHERE", err)
	}
}

func TestZonesCatalog(t *testing.T) {
	t.Parallel()
	g := newGateway(t, Config{})
	zs := g.Service.Zones()
	var de *gateway.ZoneInfo
	for i := range zs {
		if zs[i].Zone == "DE" {
			de = &zs[i]
		}
	}
	if de == nil || !de.History || len(de.Locations) == 0 || de.Forecasters[forecast.SignalLifecycle] != forecast.SourceBaseline {
		t.Fatalf("DE=%+v, want history, cloud regions and the baseline as first step (no models)", de)
	}
}

// TestAcceptance is the scenario: a 3-hour job across DE, SE, PL and
// ES with a 48-hour deadline, on trained models, checked against a brute
// force over the same forecasts.
func TestAcceptance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("trains models")
	}
	tables, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zones := []forecast.Zone{"DE", "SE", "PL", "ES"}
	if _, err := workflow.Train(context.Background(), tables, dir, workflow.TrainConfig{
		Until: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Zones: zones, Signals: []forecast.Signal{forecast.SignalLifecycle}, NoGeneric: true,
	}); err != nil {
		t.Fatal(err)
	}
	now := replayStart.Add(37 * time.Minute)
	g := newGateway(t, Config{Options: Options{ModelsDir: dir}, Clock: fixed{now}})
	deadline := now.Add(48 * time.Hour)
	d, err := g.Service.Schedule(context.Background(), gateway.Request{Zones: zones, Duration: 3 * time.Hour, Deadline: deadline})
	if err != nil {
		t.Fatal(err)
	}
	// Brute force over the same forecasts, every 5 minutes from now.
	best := forecast.Window{Mean: math.Inf(1)}
	for _, z := range zones {
		fc, _, err := g.Service.Forecast(context.Background(), z, forecast.SignalLifecycle)
		if err != nil {
			t.Fatal(err)
		}
		if fc.Provenance.Source != forecast.SourceZone || fc.Provenance.Model != "carbon-forecaster-"+string(z) || fc.Provenance.Version == "" {
			t.Fatalf("%s provenance=%+v, want its trained zone model", z, fc.Provenance)
		}
		starts := []time.Time{now}
		for s := now.Truncate(5 * time.Minute).Add(5 * time.Minute); !s.Add(3 * time.Hour).After(deadline); s = s.Add(5 * time.Minute) {
			starts = append(starts, s)
		}
		for _, s := range starts {
			sum := 0.0
			for m := range 180 { // minute by minute
				v, ok := fc.Series.At(s.Add(time.Duration(m) * time.Minute))
				if !ok {
					t.Fatalf("forecast of %s does not cover %v", z, s)
				}
				sum += v
			}
			mean := sum / 180
			if mean < best.Mean-1e-9 || math.Abs(mean-best.Mean) <= 1e-9 && (s.Before(best.Start) || s.Equal(best.Start) && z < best.Zone) {
				best = forecast.Window{Zone: z, Start: s, End: s.Add(3 * time.Hour), Mean: mean}
			}
		}
	}
	got := d.Decision
	if got.Zone != best.Zone || !got.Start.Equal(best.Start) || math.Abs(got.Mean-best.Mean) > 1e-6 {
		t.Fatalf("decision=%+v, want %+v", got, best)
	}
	if got.End.After(deadline) {
		t.Fatalf("decision ends at %v, after the deadline %v", got.End, deadline)
	}
	if d.Baseline == nil || d.Baseline.Zone != "DE" || d.SavingsPct == nil {
		t.Fatalf("baseline=%+v savings=%v, want DE now", d.Baseline, d.SavingsPct)
	}
	t.Logf("decision %s %s–%s mean %.1f; baseline %.1f; savings %.1f%%", got.Zone, got.Start.Format(time.RFC3339), got.End.Format(time.RFC3339), got.Mean, d.Baseline.Mean, *d.SavingsPct)
}

// vendorStub is a VendorForecaster: value v for the zones of serves, or
// an EUNAVAILABLE failure (a vendor answering 429).
type vendorStub struct {
	v       float64
	fail    bool
	serves  []forecast.Zone
	signals []forecast.Signal
}

func (v vendorStub) Vendor() string             { return "electricitymaps" }
func (v vendorStub) Signals() []forecast.Signal { return v.signals }
func (v vendorStub) Serves(z forecast.Zone, s forecast.Signal) bool {
	return slices.Contains(v.serves, z) && slices.Contains(v.signals, s)
}

func (v vendorStub) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	if v.fail {
		return forecast.Forecast{}, forecast.Errorf(forecast.EUNAVAILABLE, "electricitymaps answered 429 Too Many Requests")
	}
	fc, err := constant{v: v.v, model: "vendor:electricitymaps"}.Forecast(ctx, req)
	fc.Provenance.Vendor = v.Vendor()
	return fc, err
}

// The vendor step goes where VendorPosition says; a failing vendor falls
// through to the next step and is named in Skipped.
func TestVendorPosition(t *testing.T) {
	t.Parallel()
	zoneModel := constant{v: 100, failFor: "PL", model: "zone-model"}
	generic := constant{v: 200, failFor: "PL", model: "generic-model"}
	models := func(z forecast.Zone, s forecast.Signal) forecast.Forecaster {
		switch {
		case s == forecast.SignalMarginal:
			return nil
		case z == "":
			return generic
		case z == "DE" || z == "PL":
			return zoneModel
		}
		return nil
	}
	const vendorStep = "vendor electricitymaps"
	average := []forecast.Signal{forecast.SignalLifecycle, forecast.SignalDirect}
	ok := vendorStub{v: 50, serves: []forecast.Zone{"DE", "PL", "FR"}, signals: average}
	for _, tt := range []struct {
		pos         VendorPosition
		vendor      vendorStub
		zone        forecast.Zone
		wantSource  forecast.Source
		wantSkipped []string
	}{
		{VendorFirst, ok, "DE", forecast.SourceVendor, nil},
		{VendorAfterZone, ok, "DE", forecast.SourceZone, nil},
		{VendorAfterZone, ok, "FR", forecast.SourceVendor, []string{"zone"}},
		{VendorAfterZone, ok, "PL", forecast.SourceVendor, []string{"zone"}},
		{VendorAfterGeneric, ok, "PL", forecast.SourceVendor, []string{"zone", "generic"}},
		{VendorAfterGeneric, ok, "DE", forecast.SourceZone, nil},
		{VendorLast, ok, "PL", forecast.SourceBaseline, []string{"zone", "generic"}},
		{"", ok, "PL", forecast.SourceVendor, []string{"zone", "generic"}}, // default: after-generic
		{VendorFirst, vendorStub{fail: true, serves: ok.serves, signals: average}, "DE", forecast.SourceZone, []string{vendorStep}},
		{VendorAfterGeneric, vendorStub{fail: true, serves: ok.serves, signals: average}, "PL", forecast.SourceBaseline, []string{"zone", "generic", vendorStep}},
	} {
		t.Run(fmt.Sprintf("%s %s fail=%v", tt.pos, tt.zone, tt.vendor.fail), func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, Config{Forecasters: models, Vendor: tt.vendor, Options: Options{VendorPosition: tt.pos}})
			fc, err := g.Chain.Forecast(context.Background(), forecast.Request{Zone: tt.zone, Signal: forecast.SignalLifecycle, Start: replayStart, Horizon: 96})
			if err != nil {
				t.Fatal(err)
			}
			p := fc.Provenance
			if p.Source != tt.wantSource || !slices.Equal(p.Skipped, tt.wantSkipped) {
				t.Fatalf("source %s skipped %q (reason %q), want %s skipped %q", p.Source, p.Skipped, p.Reason, tt.wantSource, tt.wantSkipped)
			}
			if (p.Source == forecast.SourceVendor) != (p.Vendor == "electricitymaps") {
				t.Fatalf("source %s, vendor %q", p.Source, p.Vendor)
			}
			if tt.vendor.fail && !strings.Contains(p.Reason, vendorStep+": unavailable: electricitymaps answered 429") {
				t.Fatalf("reason %q does not say why the vendor did not answer", p.Reason)
			}
		})
	}
	if _, err := NewBundled(context.Background(), Config{Options: Options{VendorPosition: "second"}}); forecast.ErrorField(err) != "vendor_position" {
		t.Fatalf("position second: %v", err)
	}
}

// With a vendor of the marginal signal, it is served (by the vendor only:
// no model, baseline or climatology forecasts it) and listed in the
// catalog; without one it is a 400 naming signal.
func TestMarginalSignal(t *testing.T) {
	t.Parallel()
	req := gateway.Request{Zones: []forecast.Zone{"US-CAL-CISO"}, Duration: time.Hour, Signal: forecast.SignalMarginal}
	g := newGateway(t, Config{})
	if _, err := g.Service.Schedule(context.Background(), req); forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "signal" {
		t.Fatalf("without a vendor: %v", err)
	}
	wt := vendorStub{v: 400, serves: []forecast.Zone{"US-CAL-CISO"}, signals: []forecast.Signal{forecast.SignalMarginal}}
	g = newGateway(t, Config{Vendor: wt, Options: Options{VendorPosition: VendorLast}})
	d, err := g.Service.Schedule(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p := d.Provenance["US-CAL-CISO"]; p.Source != forecast.SourceVendor || d.Decision.Mean != 400 {
		t.Fatalf("provenance %+v, mean %v", p, d.Decision.Mean)
	}
	wt.fail = true
	g = newGateway(t, Config{Vendor: wt})
	if _, err := g.Service.Schedule(context.Background(), req); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("failing vendor: %v, want EUNAVAILABLE (nothing else forecasts the marginal signal)", err)
	}
	for _, z := range g.Service.Zones() {
		if src, ok := z.Forecasters[forecast.SignalMarginal]; ok != (z.Zone == "US-CAL-CISO") || ok && src != forecast.SourceVendor {
			t.Fatalf("zone %s: marginal forecaster %q", z.Zone, src)
		}
	}
}
