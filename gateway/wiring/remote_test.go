package wiring

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/cache"
	"github.com/carbongate/carbongate/gateway/remote/breaker"
	"github.com/carbongate/carbongate/gateway/remote/remotetest"
	"github.com/carbongate/carbongate/gateway/route"
	"github.com/carbongate/carbongate/test/testsupport"
)

// moving is a replay clock that advances with wall time, so the cache's
// background retries come due.
type moving struct{ t0 time.Time }

func (c moving) Now() time.Time { return replayStart.Add(time.Since(c.t0)) }
func (c moving) Mode() string   { return "replay" }

// mutableSource is a route.Source the test changes.
type mutableSource struct {
	mu  sync.Mutex
	eps []route.Endpoint
}

func (s *mutableSource) set(eps ...route.Endpoint) { s.mu.Lock(); s.eps = eps; s.mu.Unlock() }
func (s *mutableSource) Endpoints(context.Context) ([]route.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]route.Endpoint(nil), s.eps...), nil
}

const (
	lookback = 48
	horizon  = 96
)

func backend(model string, v float64) *remotetest.Backend {
	return remotetest.NewBackend(model, lookback, horizon, v)
}

// TestRemoteFallback covers the faults of issue 3 through the whole
// chain, with real OIP servers and clients: each zone's provenance says
// which step answered and why the earlier ones did not, and the schedule
// answers within the budget of the steps it had to try.
func TestRemoteFallback(t *testing.T) {
	t.Parallel()
	de := remotetest.ServeREST(t, backend("carbon-forecaster-DE", 100), "DE")
	seB := backend("carbon-forecaster-SE", 100)
	se := remotetest.ServeGRPC(t, seB, "SE")
	seB.SetMode(remotetest.Down)
	plB := backend("carbon-forecaster-PL", 100)
	pl := remotetest.ServeREST(t, plB, "PL")
	plB.SetMode(remotetest.Hang)
	caB := backend("carbon-forecaster-US-CAL-CISO", 100)
	ca := remotetest.ServeREST(t, caB, "US-CAL-CISO")
	caB.SetMode(remotetest.WrongShape)
	txB := backend("carbon-forecaster-US-TEX-ERCO", 100)
	tx := remotetest.ServeREST(t, txB, "US-TEX-ERCO")
	txB.SetMode(remotetest.Garbage)
	nlB := backend("carbon-forecaster-NL", 100)
	nl := remotetest.ServeGRPC(t, nlB, "NL")
	nlB.SetMode(remotetest.WrongDatatype)
	killed := remotetest.ServeGRPC(t, backend("carbon-forecaster-US-NY-NYIS", 100), "US-NY-NYIS")
	killed.Close()
	gen := remotetest.ServeGRPC(t, backend("carbon-forecaster-generic", 200), "")
	dns := route.Endpoint{Zone: "ES", Protocol: route.ProtocolREST, URL: "http://nonexistent.invalid:8080", Model: "carbon-forecaster-ES"}

	// Long enough that a healthy model answers within it on a loaded
	// 2-core machine (10 zones at once; 500 ms was missed there).
	const upstream = 2 * time.Second
	g := newGateway(t, Config{
		Routes:  route.Static{de.Endpoint, se.Endpoint, pl.Endpoint, ca.Endpoint, tx.Endpoint, nl.Endpoint, killed.Endpoint, gen.Endpoint, dns},
		Options: Options{UpstreamTimeout: upstream},
	})
	tests := []struct {
		zone       forecast.Zone
		wantSource forecast.Source
		wantModel  string
		wantReason string
	}{
		{"DE", forecast.SourceZone, "carbon-forecaster-DE", ""},
		{"SE", forecast.SourceGeneric, "carbon-forecaster-generic", "remote zone: unavailable: zone model carbon-forecaster-SE: metadata: ModelMetadata: model carbon-forecaster-SE crashed"},
		{"PL", forecast.SourceGeneric, "carbon-forecaster-generic", "timed out after 2s"},
		{"US-CAL-CISO", forecast.SourceGeneric, "carbon-forecaster-generic", "answer outside the forecaster contract: output \"forecast\" has shape [1 95]"},
		{"US-TEX-ERCO", forecast.SourceGeneric, "carbon-forecaster-generic", "remote zone: unavailable: zone model carbon-forecaster-US-TEX-ERCO"},
		{"NL", forecast.SourceGeneric, "carbon-forecaster-generic", "datatype FP64, want FP32"},
		{"US-NY-NYIS", forecast.SourceGeneric, "carbon-forecaster-generic", "remote zone: unavailable: zone model carbon-forecaster-US-NY-NYIS"},
		{"ES", forecast.SourceGeneric, "carbon-forecaster-generic", "remote zone: unavailable: zone model carbon-forecaster-ES"},
		{"US-FLA-FPL", forecast.SourceGeneric, "carbon-forecaster-generic", "remote zone: no remote zone forecaster for US-FLA-FPL"},
		{"FR", forecast.SourceClimatology, "climatology", "remote generic: no remote generic forecaster for FR"},
	}
	zones := make([]forecast.Zone, len(tests))
	for i, tt := range tests {
		zones[i] = tt.zone
	}
	t0 := time.Now()
	d, err := g.Service.Schedule(context.Background(), gateway.Request{Zones: zones, Duration: 3 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// Zones are forecast concurrently; the slowest tries two remote steps.
	if el := time.Since(t0); el > 2*upstream+time.Second {
		t.Fatalf("schedule took %v, want within two upstream timeouts (%v) + slack", el, 2*upstream)
	}
	for _, tt := range tests {
		p := d.Provenance[tt.zone]
		if p.Source != tt.wantSource || p.Model != tt.wantModel {
			t.Errorf("%s: source=%q model=%q, want %q %q (reason %q)", tt.zone, p.Source, p.Model, tt.wantSource, tt.wantModel, p.Reason)
			continue
		}
		if !strings.Contains(p.Reason, tt.wantReason) || tt.wantReason == "" && p.Reason != "" {
			t.Errorf("%s: reason=%q, want %q", tt.zone, p.Reason, tt.wantReason)
		}
		if p.Source == forecast.SourceZone && p.Version != "1" {
			t.Errorf("%s: version=%q, want the response's model_version", tt.zone, p.Version)
		}
	}
}

// TestRemoteBothDown: zone and generic servers both fail; the in-process
// baseline answers and says why.
func TestRemoteBothDown(t *testing.T) {
	t.Parallel()
	zb, gb := backend("carbon-forecaster-DE", 100), backend("carbon-forecaster-generic", 200)
	zs, gs := remotetest.ServeREST(t, zb, "DE"), remotetest.ServeGRPC(t, gb, "")
	zb.SetMode(remotetest.Down)
	gb.SetMode(remotetest.Hang)
	g := newGateway(t, Config{Routes: route.Static{zs.Endpoint, gs.Endpoint}, Options: Options{UpstreamTimeout: 100 * time.Millisecond}})
	fc, _, err := g.Service.Forecast(context.Background(), "DE", forecast.SignalLifecycle)
	if err != nil {
		t.Fatal(err)
	}
	p := fc.Provenance
	if p.Source != forecast.SourceBaseline || !strings.Contains(p.Reason, "remote zone: unavailable: zone model carbon-forecaster-DE") ||
		!strings.Contains(p.Reason, "remote generic: ") || !strings.Contains(p.Reason, "timed out after 100ms") {
		t.Fatalf("provenance=%+v, want baseline after both remote steps failed", p)
	}
	if !g.Chain.Degraded(fc) {
		t.Fatal("a baseline forecast with remote models routed is not degraded")
	}
}

// TestRemoteBreaker: a dead zone server opens its breaker; the chain then
// skips it fast and says "circuit open".
func TestRemoteBreaker(t *testing.T) {
	t.Parallel()
	zb := backend("carbon-forecaster-DE", 100)
	zs := remotetest.ServeREST(t, zb, "DE")
	zb.SetMode(remotetest.Down)
	g := newGateway(t, Config{Routes: route.Static{zs.Endpoint}, Options: Options{Breaker: breaker.Config{Failures: 2, Cooldown: time.Hour}}})
	req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: replayStart, Horizon: horizon}
	var fc forecast.Forecast
	for range 3 {
		var err error
		if fc, err = g.Chain.Forecast(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	calls := zb.Metadatas() + zb.Infers()
	if fc.Provenance.Source != forecast.SourceBaseline || !strings.Contains(fc.Provenance.Reason, "remote zone: unavailable: zone model carbon-forecaster-DE: circuit open") || calls != 2 {
		t.Fatalf("provenance=%+v after %d upstream calls, want baseline with circuit open after 2", fc.Provenance, calls)
	}
}

// TestRemoteRecovery: a zone served by a fallback step is retried in the
// background; when its server recovers from a cold start ("not ready") the
// cache serves the zone model again without any request waiting for it.
// A route that appears later (route refresh) is picked up the same way.
func TestRemoteRecovery(t *testing.T) {
	t.Parallel()
	zb := backend("carbon-forecaster-DE", 100)
	zs := remotetest.ServeREST(t, zb, "DE")
	zb.SetNotReady(1 << 30)
	plb := backend("carbon-forecaster-PL", 50)
	pls := remotetest.ServeGRPC(t, plb, "PL")
	src := &mutableSource{}
	src.set(zs.Endpoint)
	g := newGateway(t, Config{
		Routes: src, RetryInterval: 50 * time.Millisecond,
		Options: Options{RouteRefresh: 20 * time.Millisecond, UpstreamTimeout: 100 * time.Millisecond,
			Breaker: breaker.Config{Cooldown: 50 * time.Millisecond}},
		Clock: moving{time.Now()},
	})
	g.Start()
	ctx := context.Background()
	for _, z := range []forecast.Zone{"DE", "PL"} {
		fc, _, err := g.Service.Forecast(ctx, z, forecast.SignalLifecycle)
		if err != nil {
			t.Fatal(err)
		}
		if fc.Provenance.Source != forecast.SourceBaseline {
			t.Fatalf("%s: provenance=%+v, want baseline while the zone model is cold or unrouted", z, fc.Provenance)
		}
	}
	zb.SetNotReady(0)
	src.set(zs.Endpoint, pls.Endpoint)
	want := map[forecast.Zone]string{"DE": "carbon-forecaster-DE", "PL": "carbon-forecaster-PL"}
	deadline := time.Now().Add(5 * time.Second)
	for z, model := range want {
		for {
			fc, _, err := g.Service.Forecast(ctx, z, forecast.SignalLifecycle)
			if err != nil {
				t.Fatal(err)
			}
			if fc.Provenance.Source == forecast.SourceZone && fc.Provenance.Model == model {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: still %+v; want the zone model after recovery", z, fc.Provenance)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestNewBundled builds a gateway from a list of routes, as a load test
// would.
func TestNewBundled(t *testing.T) {
	t.Parallel()
	zs := remotetest.ServeGRPC(t, backend("carbon-forecaster-DE", 100), "DE")
	g, err := NewBundled(context.Background(), Config{Routes: route.Static{zs.Endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	fc, _, err := g.Service.Forecast(context.Background(), "DE", "")
	if err != nil || fc.Provenance.Source != forecast.SourceZone {
		t.Fatalf("fc=%+v err=%v", fc.Provenance, err)
	}
}

// uncached computes every forecast through the chain: a cold cache on
// every lookup.
type uncached struct {
	g     *Gateway
	hours int
}

func (u uncached) Peek(key cache.Key) (forecast.Forecast, bool) { return forecast.Forecast{}, false }
func (u uncached) Get(ctx context.Context, key cache.Key) (forecast.Forecast, error) {
	return u.g.Chain.Forecast(ctx, forecast.Request{Zone: key.Zone, Signal: key.Signal, Start: replayStart, Horizon: u.hours})
}

// BenchmarkFanOut compares a schedule across 12 zones with one across a
// single zone, each zone forecast by its own remote model over loopback,
// cache cold on every iteration. latency is the model's own inference time
// (sleep on the server, no CPU): loopback servers share this machine's CPUs
// with the gateway, which a real deployment does not.
func BenchmarkFanOut(b *testing.B) {
	tables, err := bundled.Load()
	if err != nil {
		b.Fatal(err)
	}
	zones := slices.Sorted(maps.Keys(tables))
	if len(zones) < 12 {
		b.Fatalf("bundled data has %d zones, want 12", len(zones))
	}
	zones = zones[:12]
	type result struct{ one, all time.Duration }
	ratio := func(r result) float64 { return float64(r.all) / float64(r.one) }
	measure := func(name string, svc *gateway.Service, r *result) {
		for _, n := range []int{1, 12} {
			b.Run(fmt.Sprintf("%s/zones=%d", name, n), func(b *testing.B) {
				req := gateway.Request{Zones: zones[:n], Duration: 3 * time.Hour}
				if d, err := svc.Schedule(context.Background(), req); err != nil || d.Provenance[zones[0]].Source != forecast.SourceZone {
					b.Fatalf("schedule: %v %+v", err, d.Provenance[zones[0]])
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := svc.Schedule(context.Background(), req); err != nil {
						b.Fatal(err)
					}
				}
				if per := b.Elapsed() / time.Duration(b.N); n == 1 {
					r.one = per
				} else {
					r.all = per
				}
			})
		}
	}
	var lines []string
	var last result
	for _, proto := range []string{route.ProtocolREST, route.ProtocolGRPC} {
		for _, latency := range []time.Duration{0, 5 * time.Millisecond} {
			var eps route.Static
			for _, z := range zones {
				bk := backend("carbon-forecaster-"+string(z), 100)
				bk.SetDelay(latency)
				serve := remotetest.ServeREST
				if proto == route.ProtocolGRPC {
					serve = remotetest.ServeGRPC
				}
				eps = append(eps, serve(b, bk, z).Endpoint)
			}
			g := newGateway(b, Config{Routes: eps, Options: Options{UpstreamTimeout: 5 * time.Second}})
			svc, err := gateway.New(gateway.Config{Forecasts: uncached{g, horizon}, Known: g.Chain.Known, Clock: fixed{replayStart}})
			if err != nil {
				b.Fatal(err)
			}
			var r result
			measure(fmt.Sprintf("%s/latency=%v", proto, latency), svc, &r)
			if latency == 0 && proto == route.ProtocolGRPC {
				// The same schedules from a warm cache: the window search
				// alone, which grows with the zones whatever the fan-out.
				var w result
				measure("cached", g.Service, &w)
				lines = append(lines, fmt.Sprintf("window search alone (cache warm): 1 zone %v, 12 zones %v", w.one.Round(time.Microsecond), w.all.Round(time.Microsecond)))
			}
			if r.one > 0 && r.all > 0 {
				lines = append(lines, fmt.Sprintf("fan-out %s, model latency %v: 1 zone %v, 12 zones %v, ratio %.2f×",
					proto, latency, r.one.Round(time.Microsecond), r.all.Round(time.Microsecond), ratio(r)))
				last = r
			}
		}
	}
	for _, l := range lines {
		fmt.Println(l)
	}
	if last.one > 0 {
		testsupport.Goal(b, ratio(last) <= 1.5, "fan-out to 12 zones vs 1 (grpc, 5ms model latency, cache cold, %d CPUs): %.2f× (goal ≤ 1.5×)", runtime.NumCPU(), ratio(last))
	}
}
