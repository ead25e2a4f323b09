package gateway

import (
	"math"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/forecast/regions"
)

// Bounds of a job's power figures: beyond them a figure is a mistake
// (a megawatt is a rack room, not a job; a tenth of a vCPU idle draws
// about 70 mW, so less than 10 mW is no job either).
const (
	MinPowerWatts = 0.01
	MaxPowerWatts = 1e6
	MaxVCPUs      = 1 << 16
	MaxMemoryGiB  = 1 << 20
)

// CheckPowerWatts is the one rule on a job's power in watts: within
// MinPowerWatts..MaxPowerWatts; else EINVALID naming field.
func CheckPowerWatts(w float64, field string) error {
	if !(w >= MinPowerWatts && w <= MaxPowerWatts) {
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s must be within %g..%g watts, got %g", field, MinPowerWatts, MaxPowerWatts, w)
	}
	return nil
}

// CheckUtilization is the one rule on a CPU utilisation, wherever it is
// given (a scheduling request, GET /v1/instance-types): a fraction in
// (0, 1] (a job uses some CPU; 50 is a mistaken percentage); else
// EINVALID naming field.
func CheckUtilization(u float64, field string) error {
	if !(u > 0 && u <= 1) {
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s must be a fraction in (0, 1], not a percentage, got %g", field, u)
	}
	return nil
}

// CheckVCPUs is the one rule on a count of vCPUs: a whole number from 1
// to MaxVCPUs; else EINVALID naming field.
func CheckVCPUs(v float64, field string) error {
	if !(v >= 1 && v <= MaxVCPUs) || v != math.Trunc(v) {
		return forecast.FieldErrorf(forecast.EINVALID, field, "%s must be a whole number of vCPUs from 1 to %d, got %g", field, MaxVCPUs, v)
	}
	return nil
}

// Power is a job's estimated average electrical power, from which
// Schedule computes the energy and emissions of every window.
type Power struct {
	Watts        float64 // average draw, the data centre's PUE included
	Source       string  // the request field it comes from: power_watts, instance_type or vcpus
	Provider     string  // whose coefficients estimated Watts (aws, azure); "" for power_watts
	InstanceType string  // with Source instance_type: the catalog's spelling
	Utilization  float64 // with Source instance_type or vcpus: the CPU utilisation of the estimate, 0..1
	// EmbodiedPerHour is the instance type's embodied emissions per hour
	// of use, grams CO2e, when the request asked for them; nil otherwise.
	EmbodiedPerHour *float64
}

// Energy is a job's energy and the emissions it saves, for a request with
// a power figure.
type Energy struct {
	Power     Power
	KWh       float64  // Power.Watts over the job's duration, the same in every window
	SavingsG  *float64 // the baseline's emissions minus the decision's, grams CO2e; nil without a baseline
	EmbodiedG *float64 // when asked: embodied emissions over the duration, grams CO2e, wherever and whenever it runs
}

// energyOf returns the energy of a job of power p running for d.
func energyOf(p Power, d time.Duration) *Energy {
	e := &Energy{Power: p, KWh: p.Watts * d.Hours() / 1000}
	if p.EmbodiedPerHour != nil {
		g := *p.EmbodiedPerHour * d.Hours()
		e.EmbodiedG = &g
	}
	return e
}

// parsePower reads the power fields of t: power_watts, instance_type
// (with provider, or the catalog that has the type) or vcpus and
// memory_gib (with provider, or the one provider of locs), utilization and
// include_embodied. Without any of them it returns nil. Every error is an
// EINVALID naming the field.
func parsePower(t RequestText, locs []Location) (*Power, error) {
	// One source only: the first given wins the error message's blame on
	// the others.
	sources := []struct {
		name  string
		given bool
	}{{"power_watts", t.PowerWatts != nil}, {"instance_type", t.InstanceType != nil}, {"vcpus", t.VCPUs != nil || t.MemoryGiB != nil}}
	source := ""
	for _, s := range sources {
		if !s.given {
			continue
		}
		if source != "" {
			field := s.name
			if field == "vcpus" && t.VCPUs == nil {
				field = "memory_gib"
			}
			return nil, forecast.FieldErrorf(forecast.EINVALID, field, "give the job's power one way: power_watts, instance_type, or vcpus and memory_gib (%s is given as well)", source)
		}
		source = s.name
	}
	embodied := t.IncludeEmbodied != nil && *t.IncludeEmbodied
	if source != "instance_type" && embodied {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "include_embodied", "include_embodied needs instance_type: embodied emissions are known per instance type")
	}
	if source == "" || source == "power_watts" {
		for _, f := range []struct {
			name  string
			given bool
		}{{"provider", t.Provider != nil}, {"utilization", t.Utilization != nil}} {
			if f.given {
				return nil, forecast.FieldErrorf(forecast.EINVALID, f.name, "%s applies only with instance_type or vcpus", f.name)
			}
		}
	}
	switch source {
	case "":
		return nil, nil
	case "power_watts":
		w := *t.PowerWatts
		if err := CheckPowerWatts(w, "power_watts"); err != nil {
			return nil, err
		}
		return &Power{Watts: w, Source: source}, nil
	}
	cat, err := powerCatalog(t, locs)
	if err != nil {
		return nil, err
	}
	u := cat.Coefficients().CPUUtilization
	if t.Utilization != nil {
		u = *t.Utilization
		if err := CheckUtilization(u, "utilization"); err != nil {
			return nil, err
		}
	}
	p := &Power{Source: source, Provider: cat.Provider(), Utilization: u}
	if source == "instance_type" {
		typ, ok := cat.Lookup(*t.InstanceType)
		if !ok {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "instance_type", "unknown %s instance type %q (GET /v1/instance-types lists fitting ones)", p.Provider, clip(*t.InstanceType))
		}
		p.InstanceType, p.Watts = typ.Name, cat.Estimate(typ, u).Total
		if embodied {
			g, ok := cat.Embodied(typ, time.Hour)
			if !ok {
				return nil, forecast.FieldErrorf(forecast.EINVALID, "include_embodied", "the catalog has no embodied emissions for %s %s", p.Provider, typ.Name)
			}
			p.EmbodiedPerHour = &g
		}
		return p, nil
	}
	if t.VCPUs == nil {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "vcpus", "memory_gib needs vcpus")
	}
	v, m := *t.VCPUs, 0.0
	if err := CheckVCPUs(v, "vcpus"); err != nil {
		return nil, err
	}
	if t.MemoryGiB != nil {
		m = *t.MemoryGiB
		if !(m >= 0 && m <= MaxMemoryGiB) {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "memory_gib", "memory_gib must be within 0..%d, got %g", MaxMemoryGiB, m)
		}
	}
	p.Watts = cat.EstimateSize(v, m, u).Total
	return p, nil
}

// powerCatalog returns the instance catalog whose coefficients estimate
// the job's power: the provider field's; else, for instance_type, the one
// catalog that has the type; else the one provider of the locations.
func powerCatalog(t RequestText, locs []Location) (*instances.Catalog, error) {
	if t.Provider != nil {
		name, ok := regions.CanonicalProvider(*t.Provider)
		if !ok {
			name = *t.Provider
		}
		cat, err := instances.Load(name)
		if err != nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "provider", "no instance data for provider %q: want one of %s", clip(*t.Provider), strings.Join(instances.Providers, ", "))
		}
		return cat, nil
	}
	if t.InstanceType != nil {
		var found *instances.Catalog
		for _, p := range instances.Providers {
			cat, err := instances.Load(p)
			if err != nil {
				return nil, err
			}
			if _, ok := cat.Lookup(*t.InstanceType); ok {
				found = cat
				break // names differ between providers (a test checks)
			}
		}
		if found == nil {
			return nil, forecast.FieldErrorf(forecast.EINVALID, "instance_type", "unknown instance type %q: no provider's catalog (%s) has it", clip(*t.InstanceType), strings.Join(instances.Providers, ", "))
		}
		return found, nil
	}
	provider := ""
	for _, l := range locs {
		p, ok := regions.CanonicalProvider(l.Provider)
		if !ok || provider != "" && p != provider {
			provider = ""
			break
		}
		provider = p
	}
	if provider == "" {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "provider", "vcpus needs provider (%s) unless every location names the same one", strings.Join(instances.Providers, ", "))
	}
	cat, err := instances.Load(provider)
	if err != nil {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "provider", "the locations' provider %s has no instance data: give provider (%s)", provider, strings.Join(instances.Providers, ", "))
	}
	return cat, nil
}
