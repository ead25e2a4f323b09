package fallback

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }

// fake answers with a constant series, fails, blocks until its context
// ends, or ignores its context and sleeps.
type fake struct {
	value  float64
	err    error
	block  bool
	sleep  time.Duration
	panics bool
	short  bool
}

func (f fake) Forecast(ctx context.Context, req forecast.Request) (forecast.Forecast, error) {
	switch {
	case f.panics:
		panic("boom")
	case f.block:
		<-ctx.Done()
		return forecast.Forecast{}, ctx.Err()
	case f.sleep > 0:
		time.Sleep(f.sleep)
	case f.err != nil:
		return forecast.Forecast{}, f.err
	}
	n := req.Horizon
	if f.short {
		n--
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = f.value
	}
	return forecast.Forecast{Series: forecast.Series{Start: req.Start, Values: vals},
		Provenance: forecast.Provenance{Model: "fake", Version: "1"}}, nil
}

func step(src forecast.Source, f forecast.Forecaster, timeout time.Duration) Step {
	return Step{Source: src, Timeout: timeout, For: func(forecast.Zone, forecast.Signal) forecast.Forecaster { return f }}
}

func none(src forecast.Source) Step {
	return Step{Source: src, For: func(forecast.Zone, forecast.Signal) forecast.Forecaster { return nil }}
}

func TestChain(t *testing.T) {
	t.Parallel()
	start := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC)
	unavailable := forecast.Errorf(forecast.EUNAVAILABLE, "model server not ready")
	tests := []struct {
		name       string
		steps      []Step
		wantSource forecast.Source
		wantValue  float64
		wantReason []string // substrings
		wantCode   string
		maxElapsed time.Duration
	}{
		{name: "zone answers", steps: []Step{
			step(forecast.SourceZone, fake{value: 1}, time.Second), step(forecast.SourceGeneric, fake{value: 2}, time.Second)},
			wantSource: forecast.SourceZone, wantValue: 1},
		{name: "no zone model: generic", steps: []Step{
			none(forecast.SourceZone), step(forecast.SourceGeneric, fake{value: 2}, time.Second)},
			wantSource: forecast.SourceGeneric, wantValue: 2, wantReason: []string{"zone: no zone forecaster for DE"}},
		{name: "zone fails, generic fails: baseline", steps: []Step{
			step(forecast.SourceZone, fake{err: unavailable}, time.Second),
			step(forecast.SourceGeneric, fake{err: errors.New("secret detail")}, time.Second),
			step(forecast.SourceBaseline, fake{value: 3}, time.Second)},
			wantSource: forecast.SourceBaseline, wantValue: 3,
			wantReason: []string{"zone: unavailable: model server not ready", "generic: internal error"}},
		{name: "zone times out (honours ctx): generic", steps: []Step{
			step(forecast.SourceZone, fake{block: true}, 30*time.Millisecond), step(forecast.SourceGeneric, fake{value: 2}, time.Second)},
			wantSource: forecast.SourceGeneric, wantValue: 2, wantReason: []string{"zone: timed out after 30ms"}, maxElapsed: time.Second},
		{name: "zone ignores ctx and is abandoned", steps: []Step{
			step(forecast.SourceZone, fake{sleep: 300 * time.Millisecond, value: 1}, 20*time.Millisecond), step(forecast.SourceGeneric, fake{value: 2}, time.Second)},
			wantSource: forecast.SourceGeneric, wantValue: 2, wantReason: []string{"zone: timed out after 20ms"}, maxElapsed: 200 * time.Millisecond},
		{name: "panic is a failure", steps: []Step{
			step(forecast.SourceZone, fake{panics: true}, time.Second), step(forecast.SourceClimatology, fake{value: 4}, 0)},
			wantSource: forecast.SourceClimatology, wantValue: 4, wantReason: []string{"zone: internal error"}},
		{name: "short answer is a failure", steps: []Step{
			step(forecast.SourceZone, fake{short: true, value: 1}, time.Second), step(forecast.SourceClimatology, fake{value: 4}, 0)},
			wantSource: forecast.SourceClimatology, wantValue: 4, wantReason: []string{"zone: internal: answered 23 hours"}},
		{name: "everything fails", steps: []Step{
			step(forecast.SourceZone, fake{err: unavailable}, time.Second), none(forecast.SourceClimatology)},
			wantCode: forecast.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{Steps: tt.steps, Known: func(z forecast.Zone) bool { return z == "DE" }})
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Now()
			fc, err := c.Forecast(context.Background(), forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: start, Horizon: 24})
			if tt.maxElapsed > 0 && time.Since(t0) > tt.maxElapsed {
				t.Fatalf("took %v, want at most %v", time.Since(t0), tt.maxElapsed)
			}
			if tt.wantCode != "" {
				if got := forecast.ErrorCode(err); got != tt.wantCode {
					t.Fatalf("code=%q (%v), want %q", got, err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fc.Provenance.Source, tt.wantSource; got != want {
				t.Fatalf("source=%q, want %q (reason %q)", got, want, fc.Provenance.Reason)
			}
			if got, want := fc.Series.Values[0], tt.wantValue; got != want {
				t.Fatalf("value=%v, want %v", got, want)
			}
			if !fc.Provenance.IssuedAt.Equal(start) {
				t.Fatalf("issued_at=%v, want %v", fc.Provenance.IssuedAt, start)
			}
			for _, w := range tt.wantReason {
				if !strings.Contains(fc.Provenance.Reason, w) {
					t.Fatalf("reason=%q, want it to contain %q", fc.Provenance.Reason, w)
				}
			}
			if len(tt.wantReason) == 0 && fc.Provenance.Reason != "" {
				t.Fatalf("reason=%q, want none", fc.Provenance.Reason)
			}
			if strings.Contains(fc.Provenance.Reason, "secret") {
				t.Fatalf("reason %q leaks an internal error", fc.Provenance.Reason)
			}
		})
	}
}

func TestChainUnknownZone(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Steps: []Step{step(forecast.SourceZone, fake{value: 1}, 0)}, Known: func(forecast.Zone) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Forecast(context.Background(), forecast.Request{Zone: "XX", Start: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Horizon: 1})
	if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
		t.Fatalf("code=%q, want %q", got, want)
	}
	if !strings.Contains(forecast.ErrorMessage(err), "XX") {
		t.Fatalf("message %q does not name the zone", forecast.ErrorMessage(err))
	}
}

// TestChainNoForecaster: a known zone for which no step has a forecaster
// (lifecycle climatology only, asked for direct) is EINFEASIBLE naming
// "signal", not an outage; a step that has one and fails is EUNAVAILABLE.
func TestChainNoForecaster(t *testing.T) {
	t.Parallel()
	known := func(forecast.Zone) bool { return true }
	req := forecast.Request{Zone: "FR", Signal: forecast.SignalDirect, Start: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Horizon: 1}
	c, err := New(Config{Steps: []Step{none(forecast.SourceZone), none(forecast.SourceClimatology)}, Known: known})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Forecast(context.Background(), req)
	if forecast.ErrorCode(err) != forecast.EINFEASIBLE || forecast.ErrorField(err) != "signal" || !strings.Contains(forecast.ErrorMessage(err), "no direct forecast for FR") {
		t.Fatalf("err=%v, want EINFEASIBLE on signal", err)
	}
	c, err = New(Config{Steps: []Step{none(forecast.SourceZone), step(forecast.SourceClimatology, fake{err: forecast.Errorf(forecast.EUNAVAILABLE, "down")}, 0)}, Known: known})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = c.Forecast(context.Background(), req); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
		t.Fatalf("err=%v, want EUNAVAILABLE", err)
	}
}

func TestChainCallerDeadline(t *testing.T) {
	t.Parallel()
	// The caller's deadline bounds a step without a timeout of its own.
	c, err := New(Config{Steps: []Step{step(forecast.SourceZone, fake{block: true}, 0), step(forecast.SourceClimatology, fake{value: 1}, 0)},
		Known: func(forecast.Zone) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Forecast(ctx, forecast.Request{Zone: "DE", Start: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC), Horizon: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err=%v, want the caller's deadline", err)
	}
}

func TestDegraded(t *testing.T) {
	t.Parallel()
	c, err := New(Config{Steps: []Step{none(forecast.SourceZone), step(forecast.SourceGeneric, fake{}, 0), step(forecast.SourceClimatology, fake{}, 0)},
		Known: func(forecast.Zone) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := c.FirstSource("DE", forecast.SignalDirect); src != forecast.SourceGeneric {
		t.Fatalf("FirstSource=%q, want generic", src)
	}
	if c.Degraded(forecast.Forecast{Zone: "DE", Provenance: forecast.Provenance{Source: forecast.SourceGeneric}}) {
		t.Fatal("generic answer is degraded, want not (no zone model exists)")
	}
	if !c.Degraded(forecast.Forecast{Zone: "DE", Provenance: forecast.Provenance{Source: forecast.SourceClimatology}}) {
		t.Fatal("climatology answer is not degraded, want degraded")
	}
}

func TestFlat(t *testing.T) {
	t.Parallel()
	f := Flat{Model: "climatology", Value: func(z forecast.Zone, _ forecast.Signal) (float64, string, error) {
		if z != "FR" {
			return 0, "", forecast.Errorf(forecast.ENOTFOUND, "no climatology for %s", z)
		}
		return 42, "src:2024", nil
	}}
	start := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	fc, err := f.Forecast(context.Background(), forecast.Request{Zone: "FR", Start: start, Horizon: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(fc.Series.Values), 3; got != want || fc.Series.Values[2] != 42 {
		t.Fatalf("values=%v, want 3 × 42", fc.Series.Values)
	}
	if fc.Provenance.Model != "climatology" || fc.Provenance.Version != "src:2024" {
		t.Errorf("provenance %+v", fc.Provenance)
	}
	if _, err := f.Forecast(context.Background(), forecast.Request{Zone: "XX", Start: start, Horizon: 3}); forecast.ErrorCode(err) != forecast.ENOTFOUND {
		t.Fatalf("err=%v, want ENOTFOUND", err)
	}
}

// TestNamedSteps: two steps of one source (a remote and an in-process zone
// model) are told apart in reasons and by Degraded.
func TestNamedSteps(t *testing.T) {
	t.Parallel()
	var remoteErr error
	routed := true
	remote := Step{Source: forecast.SourceZone, Name: "remote zone", For: func(forecast.Zone, forecast.Signal) forecast.Forecaster {
		if !routed {
			return nil
		}
		return fake{value: 1, err: remoteErr}
	}}
	c, err := New(Config{
		Steps: []Step{remote, step(forecast.SourceZone, fake{value: 2}, 0), step(forecast.SourceBaseline, fake{value: 3}, 0)},
		Known: func(forecast.Zone) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	req := forecast.Request{Zone: "DE", Signal: forecast.SignalLifecycle, Start: time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC), Horizon: 4}
	fc, err := c.Forecast(context.Background(), req)
	if err != nil || fc.Series.Values[0] != 1 || c.Degraded(fc) {
		t.Fatalf("fc=%+v err=%v degraded=%v, want the remote step, not degraded", fc.Provenance, err, c.Degraded(fc))
	}
	remoteErr = forecast.Errorf(forecast.EUNAVAILABLE, "circuit open")
	fc, err = c.Forecast(context.Background(), req)
	if err != nil || fc.Series.Values[0] != 2 || fc.Provenance.Source != forecast.SourceZone ||
		fc.Provenance.Reason != "remote zone: unavailable: circuit open" || !slices.Equal(fc.Provenance.Skipped, []string{"remote zone"}) || !c.Degraded(fc) {
		t.Fatalf("fc=%+v err=%v degraded=%v, want the in-process zone step, degraded", fc.Provenance, err, c.Degraded(fc))
	}
	// Degraded decides on Skipped, not on the text of Reason.
	fc.Provenance.Skipped = nil
	if c.Degraded(fc) {
		t.Fatalf("degraded with no step skipped (reason %q)", fc.Provenance.Reason)
	}
	// A forecast of the remote model is recomputed once its route is
	// withdrawn (it used to be served until the hour turned).
	remoteErr = nil
	fromRemote, err := c.Forecast(context.Background(), req)
	if err != nil || c.Degraded(fromRemote) {
		t.Fatalf("remote forecast %+v (%v): degraded before the route went", fromRemote.Provenance, err)
	}
	routed = false
	if !c.Degraded(fromRemote) {
		t.Fatal("a forecast of a withdrawn remote model is not degraded")
	}
	if _, err := New(Config{Steps: []Step{remote, remote}, Known: func(forecast.Zone) bool { return true }}); err == nil {
		t.Fatal("two steps with one name accepted")
	}
}
