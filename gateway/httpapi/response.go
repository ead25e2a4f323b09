package httpapi

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/api"
)

// scheduleBody is the wire form of a scheduling answer (api.Schedule)
// with what its pointer members point to, so that one pooled value holds
// the whole answer.
type scheduleBody struct {
	api.Schedule
	baseline api.Placement // what Baseline points to, when scheduleResponse sets it
	energy   *energyJSON   // what the energy members point to, with a power figure
}

// energyJSON holds what a scheduleBody's energy members point to.
type energyJSON struct {
	kwh, savings, embodied, utilization float64
	power                               api.Power
	grams                               []float64 // decision, baseline, then the alternatives
}

func placementOf(p gateway.Placement) api.Placement {
	out := api.Placement{Zone: string(p.Zone), Start: p.Start.UTC(), End: p.End.UTC(), MeanIntensity: p.Mean}
	if p.Location != nil {
		out.Location = &api.Location{Provider: p.Location.Provider, Region: p.Location.Region}
	}
	return out
}

func provenanceOf(p forecast.Provenance) api.Provenance {
	return api.Provenance{Model: p.Model, Version: p.Version, Source: string(p.Source), IssuedAt: p.IssuedAt.UTC(), Reason: p.Reason, Vendor: p.Vendor}
}

func clockOf(r gateway.Reading) api.Clock { return api.Clock{Mode: r.Mode, Now: r.Now.UTC()} }

// scheduleResponse returns the wire form of d. The caller may hand it back
// to releaseSchedule once it is encoded, so that its slices and map are
// reused.
func scheduleResponse(d gateway.Decision, id string) *scheduleBody {
	out := schedulePool.Get().(*scheduleBody)
	alts, infeasible, prov := out.Alternatives[:0], out.Infeasible[:0], out.Provenance
	if prov == nil {
		prov = make(map[string]api.Provenance, len(d.Provenance))
	}
	if alts == nil {
		alts = make([]api.Placement, 0, len(d.Alternatives)) // [], not null, when empty
	}
	*out = scheduleBody{Schedule: api.Schedule{
		Decision:     placementOf(d.Decision),
		SavingsPct:   d.SavingsPct,
		Alternatives: slices.Grow(alts, len(d.Alternatives))[:len(d.Alternatives)],
		Provenance:   prov,
		Signal:       string(d.Signal),
		Unit:         gateway.Unit,
		Clock:        clockOf(d.Clock),
		RequestID:    id,
	}}
	if d.Baseline != nil {
		out.baseline = placementOf(*d.Baseline)
		out.Baseline = &out.baseline
	}
	for i, a := range d.Alternatives {
		out.Alternatives[i] = placementOf(a)
	}
	if len(d.Infeasible) > 0 {
		out.Infeasible = infeasible
	}
	for _, r := range d.Infeasible {
		out.Infeasible = append(out.Infeasible, api.ZoneReason{Zone: string(r.Zone), Reason: r.Reason})
	}
	if len(d.Capped) > 0 {
		out.Capped = make([]api.Capped, len(d.Capped))
		for i, c := range d.Capped {
			out.Capped[i] = api.Capped{Zone: string(c.Zone), Share: c.Share}
		}
	}
	for z, p := range d.Provenance {
		out.Provenance[string(z)] = provenanceOf(p)
	}
	if d.Energy != nil {
		withEnergy(out, d)
	}
	return out
}

// withEnergy adds d's energy to out: the power, each placement's energy
// and grams, the savings and embodied grams.
func withEnergy(out *scheduleBody, d gateway.Decision) {
	e := d.Energy
	en := &energyJSON{kwh: e.KWh, utilization: e.Power.Utilization, grams: make([]float64, 0, len(d.Alternatives)+2),
		power: api.Power{Watts: e.Power.Watts, Source: e.Power.Source, Provider: e.Power.Provider, InstanceType: e.Power.InstanceType}}
	if e.Power.Source != "power_watts" {
		en.power.Utilization = &en.utilization
	}
	out.energy, out.Power = en, &en.power
	set := func(p *api.Placement, g float64) {
		en.grams = append(en.grams, g)
		p.EnergyKWh, p.EmissionsG = &en.kwh, &en.grams[len(en.grams)-1]
	}
	set(&out.Decision, d.Decision.EmissionsG)
	if d.Baseline != nil {
		set(out.Baseline, d.Baseline.EmissionsG)
	}
	for i, a := range d.Alternatives {
		set(&out.Alternatives[i], a.EmissionsG)
	}
	if e.SavingsG != nil {
		en.savings = *e.SavingsG
		out.SavingsG = &en.savings
	}
	if e.EmbodiedG != nil {
		en.embodied = *e.EmbodiedG
		out.EmbodiedG = &en.embodied
	}
}

// schedulePool recycles the scheduleBody values of scheduleResponse.
var schedulePool = sync.Pool{New: func() any { return new(scheduleBody) }}

// releaseSchedule empties b and recycles it, unless it grew large.
func releaseSchedule(b *scheduleBody) {
	if cap(b.Alternatives) > gateway.MaxCandidates || cap(b.Infeasible) > gateway.MaxCandidates || len(b.Provenance) > gateway.MaxCandidates+1 {
		return
	}
	alts, infeasible, prov := b.Alternatives[:0], b.Infeasible[:0], b.Provenance
	clear(alts[:cap(alts)])
	clear(infeasible[:cap(infeasible)])
	clear(prov)
	*b = scheduleBody{Schedule: api.Schedule{Alternatives: alts, Infeasible: infeasible, Provenance: prov}}
	schedulePool.Put(b)
}

func forecastResponse(fc forecast.Forecast, now gateway.Reading, id string) api.Forecast {
	return api.Forecast{
		Zone: string(fc.Zone), Signal: string(fc.Signal), Unit: gateway.Unit,
		Start: fc.Series.Start.UTC(), Step: "PT1H", Values: fc.Series.Values, Lower: fc.Lower, Upper: fc.Upper,
		Provenance: provenanceOf(fc.Provenance), Clock: clockOf(now), RequestID: id,
	}
}

var (
	bufPool   = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	slicePool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}
)

// writeJSON encodes v whole before writing, so that an encoding error is
// reported rather than sent half-written, and the response has a length.
func writeJSON(c *echo.Context, status int, v any) error {
	buf := bufPool.Get().(*bytes.Buffer)
	defer putBuf(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return writeBytes(c, status, buf.Bytes())
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= 64<<10 {
		buf.Reset()
		bufPool.Put(buf)
	}
}

// writeBytes writes a JSON body with its length.
func writeBytes(c *echo.Context, status int, b []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(b)
	return err
}
