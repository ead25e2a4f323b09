package httpapi

import (
	"bytes"
	"encoding/json"
	"github.com/carbongate/carbongate/gateway/api"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendScheduleMatchesEncodingJSON checks the hand-written encoder
// against encoding/json, byte for byte.
func TestAppendScheduleMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for i, b := range randomSchedules(500) {
		want := encodingJSON(t, b)
		got, err := appendSchedule(nil, &b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// encodingJSON is v as json.Encoder without HTML escaping writes it, the
// reference of the hand-written encoders.
func encodingJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

// randomSchedules returns n scheduling answers with the hard cases of
// encoding: escapes, invalid UTF-8, floats in both notations, repeated and
// non-UTC times, optional members present and absent.
func randomSchedules(n int) []scheduleBody {
	r := rand.New(rand.NewPCG(3, 4))
	strs := []string{"", "DE", "US-CAL-CISO", `quote " and \ backslash`, "tab\tnewline\n", "ünïcödé", "\u2028", "bad \xff utf8", "<html>&"}
	floats := []float64{0, 1, -1, 123.456, 1e-7, 2.5e-9, 1e21, 1e20, 36.53666666666671, math.Copysign(0, -1)}
	// Half the times repeat, as window bounds and issue times do; some are
	// not in UTC.
	var seen []time.Time
	tm := func() time.Time {
		if len(seen) > 0 && r.IntN(2) == 0 {
			return seen[r.IntN(len(seen))]
		}
		t := time.Date(2021, 6, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(1e15)))
		if r.IntN(8) == 0 {
			t = t.In(time.FixedZone("X", 3600))
		}
		seen = append(seen, t)
		return t
	}
	opt := func() *float64 { // a float or, one time in four, none
		if r.IntN(4) == 0 {
			return nil
		}
		f := floats[r.IntN(len(floats))]
		return &f
	}
	pl := func() api.Placement {
		p := api.Placement{Zone: strs[r.IntN(len(strs))], Start: tm(), End: tm(), MeanIntensity: floats[r.IntN(len(floats))]}
		if r.IntN(2) == 0 {
			p.Location = &api.Location{Provider: strs[r.IntN(len(strs))], Region: strs[r.IntN(len(strs))]}
		}
		if r.IntN(2) == 0 {
			p.EnergyKWh, p.EmissionsG = opt(), opt()
		}
		return p
	}
	out := make([]scheduleBody, n)
	for i := range out {
		b := scheduleBody{Schedule: api.Schedule{Decision: pl(), Signal: "lifecycle", Unit: "gCO2eq/kWh", Clock: api.Clock{Mode: "replay", Now: tm()}, RequestID: strs[r.IntN(len(strs))]}}
		if i%3 != 0 {
			bp := pl()
			b.Baseline = &bp
			sv := floats[r.IntN(len(floats))]
			b.SavingsPct = &sv
			b.SavingsG = opt()
		}
		b.EmbodiedG = opt()
		if r.IntN(2) == 0 {
			b.Power = &api.Power{Watts: floats[r.IntN(len(floats))], Source: strs[r.IntN(len(strs))], Provider: strs[r.IntN(len(strs))],
				InstanceType: strs[r.IntN(len(strs))], Utilization: opt()}
		}
		if i%5 != 0 {
			for range r.IntN(4) {
				b.Alternatives = append(b.Alternatives, pl())
			}
			if b.Alternatives == nil {
				b.Alternatives = []api.Placement{}
			}
		}
		for range r.IntN(3) {
			b.Infeasible = append(b.Infeasible, api.ZoneReason{Zone: strs[r.IntN(len(strs))], Reason: strs[r.IntN(len(strs))]})
		}
		for range r.IntN(3) {
			b.Capped = append(b.Capped, api.Capped{Zone: strs[r.IntN(len(strs))], Share: floats[r.IntN(len(floats))]})
		}
		if i%7 != 0 {
			b.Provenance = map[string]api.Provenance{}
			for range r.IntN(4) {
				b.Provenance[strs[r.IntN(len(strs))]] = api.Provenance{Model: strs[r.IntN(len(strs))], Source: strs[r.IntN(len(strs))], IssuedAt: tm(), Reason: strs[r.IntN(len(strs))], Vendor: strs[r.IntN(len(strs))]}
			}
		}
		out[i] = b
	}
	return out
}
