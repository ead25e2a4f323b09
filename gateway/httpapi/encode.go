package httpapi

import (
	"encoding/json"
	"github.com/carbongate/carbongate/gateway/api"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/carbongate/carbongate/gateway/httpedge"
)

// appendSchedule appends the JSON of b to dst, byte for byte what
// encoding/json (without HTML escaping) writes, followed by a newline. The
// scheduling response is the hot path: encoding/json's reflection and map
// handling cost about as much as the window search (see
// BenchmarkScheduleVsBare); a test checks the two encodings are identical.
func appendSchedule(dst []byte, b *scheduleBody) ([]byte, error) {
	e := encoder{b: dst}
	e.raw(`{"decision":`)
	e.placement(&b.Decision)
	if b.Baseline != nil {
		e.raw(`,"baseline":`)
		e.placement(b.Baseline)
	}
	e.optFloat(`,"savings_pct":`, b.SavingsPct)
	e.optFloat(`,"savings_g":`, b.SavingsG)
	e.optFloat(`,"embodied_g":`, b.EmbodiedG)
	e.raw(`,"alternatives":`)
	if b.Alternatives == nil {
		e.raw("null")
	} else {
		e.raw("[")
		for i := range b.Alternatives {
			if i > 0 {
				e.raw(",")
			}
			e.placement(&b.Alternatives[i])
		}
		e.raw("]")
	}
	if len(b.Infeasible) > 0 {
		e.raw(`,"infeasible":[`)
		for i, r := range b.Infeasible {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"zone":`)
			e.str(r.Zone)
			e.raw(`,"reason":`)
			e.str(r.Reason)
			e.raw("}")
		}
		e.raw("]")
	}
	if len(b.Capped) > 0 {
		e.raw(`,"capped":[`)
		for i, c := range b.Capped {
			if i > 0 {
				e.raw(",")
			}
			e.raw(`{"zone":`)
			e.str(c.Zone)
			e.raw(`,"share":`)
			e.float(c.Share)
			e.raw("}")
		}
		e.raw("]")
	}
	if p := b.Power; p != nil {
		e.raw(`,"power":{"watts":`)
		e.float(p.Watts)
		e.raw(`,"source":`)
		e.str(p.Source)
		e.optStr(`,"provider":`, p.Provider)
		e.optStr(`,"instance_type":`, p.InstanceType)
		e.optFloat(`,"utilization":`, p.Utilization)
		e.raw("}")
	}
	e.raw(`,"provenance":`)
	e.provenance(b.Provenance, func(p api.Provenance) {
		e.raw(`{"model":`)
		e.str(p.Model)
		e.raw(`,"version":`)
		e.str(p.Version)
		e.raw(`,"source":`)
		e.str(p.Source)
		e.raw(`,"issued_at":`)
		e.time(p.IssuedAt)
		e.optStr(`,"reason":`, p.Reason)
		e.optStr(`,"vendor":`, p.Vendor)
		e.raw("}")
	})
	e.raw(`,"signal":`)
	e.str(b.Signal)
	e.raw(`,"unit":`)
	e.str(b.Unit)
	e.raw(`,"clock":{"mode":`)
	e.str(b.Clock.Mode)
	e.raw(`,"now":`)
	e.time(b.Clock.Now)
	e.raw(`},"request_id":`)
	e.str(b.RequestID)
	e.raw("}\n")
	return e.b, e.err
}

type encoder struct {
	b   []byte
	err error
	// The last few times written, and where: a response repeats a few
	// times (window bounds, issue times) many times.
	times [8]struct {
		t    time.Time
		i, j int
	}
	next int // the entry of times to overwrite next
}

func (e *encoder) raw(s string) { e.b = append(e.b, s...) }

func (e *encoder) placement(p *api.Placement) {
	e.raw(`{"zone":`)
	e.str(p.Zone)
	if p.Location != nil {
		e.raw(`,"location":{"provider":`)
		e.str(p.Location.Provider)
		e.raw(`,"region":`)
		e.str(p.Location.Region)
		e.raw("}")
	}
	e.raw(`,"start":`)
	e.time(p.Start)
	e.raw(`,"end":`)
	e.time(p.End)
	e.raw(`,"mean_intensity":`)
	e.float(p.MeanIntensity)
	e.optFloat(`,"energy_kwh":`, p.EnergyKWh)
	e.optFloat(`,"emissions_g":`, p.EmissionsG)
	e.raw("}")
}

// optStr writes member and s when s is not empty, as encoding/json writes
// a string with omitempty.
func (e *encoder) optStr(member, s string) {
	if s != "" {
		e.raw(member)
		e.str(s)
	}
}

// optFloat writes member (`,"name":`) and *f when f is set, as
// encoding/json writes a *float64 with omitempty.
func (e *encoder) optFloat(member string, f *float64) {
	if f != nil {
		e.raw(member)
		e.float(*f)
	}
}

// provenance writes m as encoding/json writes a map: null when nil, else
// an object with the members sorted by key, each value written by value.
func (e *encoder) provenance(m map[string]api.Provenance, value func(api.Provenance)) {
	if m == nil {
		e.raw("null")
		return
	}
	var arr [32]string // the keys of a usual answer, on the stack
	keys := arr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	e.raw("{")
	for i, k := range keys {
		if i > 0 {
			e.raw(",")
		}
		e.str(k)
		e.raw(":")
		value(m[k])
	}
	e.raw("}")
}

// str writes s as encoding/json does: plain printable ASCII directly,
// anything else through encoding/json itself.
func (e *encoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			q, err := json.Marshal(s)
			if err != nil && e.err == nil {
				e.err = err
			}
			e.b = append(e.b, q...)
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

// float writes f as encoding/json's float64 encoder does.
func (e *encoder) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if _, err := json.Marshal(f); e.err == nil {
			e.err = err
		}
		return
	}
	e.b = httpedge.AppendFloat(e.b, f)
}

// time writes t as time.Time.MarshalJSON does. Identical time.Time values
// (same instant, location and monotonic reading) format identically, so a
// time written recently is copied from where it was written.
func (e *encoder) time(t time.Time) {
	for k := range e.times {
		if c := &e.times[k]; c.j > 0 && c.t == t {
			e.b = append(e.b, e.b[c.i:c.j]...)
			return
		}
	}
	if y := t.Year(); y < 0 || y > 9999 {
		if _, err := t.MarshalJSON(); e.err == nil {
			e.err = err
		}
		return
	}
	i := len(e.b)
	e.b = append(e.b, '"')
	e.b = t.AppendFormat(e.b, time.RFC3339Nano)
	e.b = append(e.b, '"')
	c := &e.times[e.next]
	c.t, c.i, c.j = t, i, len(e.b)
	e.next = (e.next + 1) % len(e.times)
}
