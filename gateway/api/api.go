// Package api holds the wire types of carbongate's HTTP API (/v1): the one
// set the server (gateway/httpapi) encodes and decodes and the Go client
// (Client) sends and reads. Times are RFC 3339 in UTC. It imports only the
// standard library, so a program that asks carbongate needs nothing else.
package api

import "time"

// Paths of the API.
const (
	PathSchedule = "/v1/schedule"
	PathForecast = "/v1/forecast"
	PathZones    = "/v1/zones"
)

// ScheduleRequest is the body of POST /v1/schedule. A nil member is
// absent: the gateway's default applies.
type ScheduleRequest struct {
	Zones         []string   `json:"zones,omitempty"`
	Locations     []Location `json:"locations,omitempty"`
	Duration      *string    `json:"duration,omitempty"` // required: "PT3H", "3h", "90m"
	EarliestStart *string    `json:"earliest_start,omitempty"`
	Deadline      *string    `json:"deadline,omitempty"`
	Signal        *string    `json:"signal,omitempty"`
	Origin        *string    `json:"origin,omitempty"`
	Step          *string    `json:"step,omitempty"`

	PowerWatts      *float64 `json:"power_watts,omitempty"`
	InstanceType    *string  `json:"instance_type,omitempty"`
	Provider        *string  `json:"provider,omitempty"`
	VCPUs           *float64 `json:"vcpus,omitempty"`
	MemoryGiB       *float64 `json:"memory_gib,omitempty"`
	Utilization     *float64 `json:"utilization,omitempty"`
	IncludeEmbodied *bool    `json:"include_embodied,omitempty"`
}

// Location is a cloud region.
type Location struct {
	Provider string `json:"provider"`
	Region   string `json:"region"`
}

// Placement is a window in a zone.
type Placement struct {
	Zone          string    `json:"zone"`
	Location      *Location `json:"location,omitempty"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
	MeanIntensity float64   `json:"mean_intensity"`
	EnergyKWh     *float64  `json:"energy_kwh,omitempty"`  // with a power figure: the job's energy
	EmissionsG    *float64  `json:"emissions_g,omitempty"` // and its emissions in this window, grams CO2e
}

// Where is the placement's zone, with its cloud region when it has one.
func (p Placement) Where() string {
	if p.Location != nil {
		return p.Zone + " (" + p.Location.Provider + "/" + p.Location.Region + ")"
	}
	return p.Zone
}

// Power is the job's estimated power, with where it comes from.
type Power struct {
	Watts        float64  `json:"watts"`
	Source       string   `json:"source"`
	Provider     string   `json:"provider,omitempty"`
	InstanceType string   `json:"instance_type,omitempty"`
	Utilization  *float64 `json:"utilization,omitempty"`
}

// ZoneReason says why a zone could not be a candidate.
type ZoneReason struct {
	Zone   string `json:"zone"`
	Reason string `json:"reason"`
}

// Capped is a zone the zone cap steered a decision away from.
type Capped struct {
	Zone  string  `json:"zone"`
	Share float64 `json:"share"`
}

// Provenance says where a forecast came from.
type Provenance struct {
	Model    string    `json:"model"`
	Version  string    `json:"version"`
	Source   string    `json:"source"`
	IssuedAt time.Time `json:"issued_at"`
	Reason   string    `json:"reason,omitempty"`
	Vendor   string    `json:"vendor,omitempty"`
}

// Clock says which clock answered and what time it read.
type Clock struct {
	Mode string    `json:"mode"`
	Now  time.Time `json:"now"`
}

// Schedule is the answer of POST /v1/schedule.
type Schedule struct {
	Decision     Placement             `json:"decision"`
	Baseline     *Placement            `json:"baseline,omitempty"`
	SavingsPct   *float64              `json:"savings_pct,omitempty"`
	SavingsG     *float64              `json:"savings_g,omitempty"`
	EmbodiedG    *float64              `json:"embodied_g,omitempty"`
	Alternatives []Placement           `json:"alternatives"`
	Infeasible   []ZoneReason          `json:"infeasible,omitempty"`
	Capped       []Capped              `json:"capped,omitempty"`
	Power        *Power                `json:"power,omitempty"`
	Provenance   map[string]Provenance `json:"provenance"`
	Signal       string                `json:"signal"`
	Unit         string                `json:"unit"`
	Clock        Clock                 `json:"clock"`
	RequestID    string                `json:"request_id"`
}

// Forecast is the answer of GET /v1/forecast.
type Forecast struct {
	Zone       string     `json:"zone"`
	Signal     string     `json:"signal"`
	Unit       string     `json:"unit"`
	Start      time.Time  `json:"start"`
	Step       string     `json:"step"`
	Values     []float64  `json:"values"`
	Lower      []float64  `json:"lower,omitempty"`
	Upper      []float64  `json:"upper,omitempty"`
	Provenance Provenance `json:"provenance"`
	Clock      Clock      `json:"clock"`
	RequestID  string     `json:"request_id"`
}

// Zone is a zone the gateway can forecast.
type Zone struct {
	Zone        string            `json:"zone"`
	History     bool              `json:"history"`
	Climatology *float64          `json:"climatology,omitempty"`
	Locations   []Location        `json:"locations"`
	Forecasters map[string]string `json:"forecasters"`
}

// Zones is the answer of GET /v1/zones.
type Zones struct {
	Zones     []Zone `json:"zones"`
	Clock     Clock  `json:"clock"`
	RequestID string `json:"request_id"`
}

// ErrorBody is the body of every error answer.
type ErrorBody struct {
	Error     ErrorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

// ErrorDetail is an error's code (forecast.EINVALID, …), the request field
// it is about, and its message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}
