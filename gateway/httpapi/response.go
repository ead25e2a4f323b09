package httpapi

import (
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
)

// Wire forms of responses. Times are RFC 3339 in UTC.

type placementJSON struct {
	Zone          string        `json:"zone"`
	Location      *locationJSON `json:"location,omitempty"`
	Start         time.Time     `json:"start"`
	End           time.Time     `json:"end"`
	MeanIntensity float64       `json:"mean_intensity"`
}

type zoneReasonJSON struct {
	Zone   string `json:"zone"`
	Reason string `json:"reason"`
}

type provenanceJSON struct {
	Model    string    `json:"model"`
	Version  string    `json:"version"`
	Source   string    `json:"source"`
	IssuedAt time.Time `json:"issued_at"`
	Reason   string    `json:"reason,omitempty"`
}

type clockJSON struct {
	Mode string    `json:"mode"`
	Now  time.Time `json:"now"`
}

type scheduleBody struct {
	Decision     placementJSON             `json:"decision"`
	Baseline     *placementJSON            `json:"baseline,omitempty"`
	SavingsPct   *float64                  `json:"savings_pct,omitempty"`
	Alternatives []placementJSON           `json:"alternatives"`
	Infeasible   []zoneReasonJSON          `json:"infeasible,omitempty"`
	Provenance   map[string]provenanceJSON `json:"provenance"`
	Signal       string                    `json:"signal"`
	Unit         string                    `json:"unit"`
	Clock        clockJSON                 `json:"clock"`
	RequestID    string                    `json:"request_id"`
}

type forecastBody struct {
	Zone       string         `json:"zone"`
	Signal     string         `json:"signal"`
	Unit       string         `json:"unit"`
	Start      time.Time      `json:"start"`
	Step       string         `json:"step"`
	Values     []float64      `json:"values"`
	Lower      []float64      `json:"lower,omitempty"`
	Upper      []float64      `json:"upper,omitempty"`
	Provenance provenanceJSON `json:"provenance"`
	Clock      clockJSON      `json:"clock"`
	RequestID  string         `json:"request_id"`
}

type zoneJSON struct {
	Zone        string            `json:"zone"`
	History     bool              `json:"history"`
	Climatology *float64          `json:"climatology,omitempty"`
	Locations   []locationJSON    `json:"locations"`
	Forecasters map[string]string `json:"forecasters"`
}

type zonesBody struct {
	Zones     []zoneJSON `json:"zones"`
	Clock     clockJSON  `json:"clock"`
	RequestID string     `json:"request_id"`
}

func placementOf(p gateway.Placement) placementJSON {
	out := placementJSON{Zone: string(p.Zone), Start: p.Start.UTC(), End: p.End.UTC(), MeanIntensity: p.Mean}
	if p.Location != nil {
		out.Location = &locationJSON{Provider: p.Location.Provider, Region: p.Location.Region}
	}
	return out
}

func provenanceOf(p forecast.Provenance) provenanceJSON {
	return provenanceJSON{Model: p.Model, Version: p.Version, Source: string(p.Source), IssuedAt: p.IssuedAt.UTC(), Reason: p.Reason}
}

func clockOf(r gateway.Reading) clockJSON { return clockJSON{Mode: r.Mode, Now: r.Now.UTC()} }

func scheduleResponse(d gateway.Decision, id string) scheduleBody {
	out := scheduleBody{
		Decision:     placementOf(d.Decision),
		SavingsPct:   d.SavingsPct,
		Alternatives: make([]placementJSON, len(d.Alternatives)),
		Provenance:   make(map[string]provenanceJSON, len(d.Provenance)),
		Signal:       string(d.Signal),
		Unit:         gateway.Unit,
		Clock:        clockOf(d.Clock),
		RequestID:    id,
	}
	if d.Baseline != nil {
		b := placementOf(*d.Baseline)
		out.Baseline = &b
	}
	for i, a := range d.Alternatives {
		out.Alternatives[i] = placementOf(a)
	}
	for _, r := range d.Infeasible {
		out.Infeasible = append(out.Infeasible, zoneReasonJSON{Zone: string(r.Zone), Reason: r.Reason})
	}
	for z, p := range d.Provenance {
		out.Provenance[string(z)] = provenanceOf(p)
	}
	return out
}

func forecastResponse(fc forecast.Forecast, now gateway.Reading, id string) forecastBody {
	return forecastBody{
		Zone: string(fc.Zone), Signal: string(fc.Signal), Unit: gateway.Unit,
		Start: fc.Series.Start.UTC(), Step: "PT1H", Values: fc.Series.Values, Lower: fc.Lower, Upper: fc.Upper,
		Provenance: provenanceOf(fc.Provenance), Clock: clockOf(now), RequestID: id,
	}
}
