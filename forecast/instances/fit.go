package instances

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// Request is a workload's size and preferences.
type Request struct {
	MinCPU    int     // vCPUs, > 0
	MinRAMGiB float64 // GiB, > 0
	Family    string  // optional: only this family (AWS: m5) or Azure series, case-insensitive
	Processor string  // optional: only types with a processor whose name contains this, case-insensitive
	Burstable bool    // also consider burstable types (excluded by default)
	GPU       bool    // consider only GPU types (excluded by default)
	// UnknownProcessor also considers types whose processor family CCF
	// does not name (old generations such as AWS m2 or Azure Av2). They
	// are excluded by default: CCF estimates them with the provider's
	// average coefficients and often counts none of their memory, which
	// makes them look cheaper than the types it does know.
	UnknownProcessor bool
	// Utilization is the CPU utilisation of the estimate, 0..1; 0 means
	// the provider's default (CCF's 50 %).
	Utilization float64
	// Alternatives is how many runners-up to return; 0 means 5.
	Alternatives int
}

// Candidate is a type that fits, with its estimated power.
type Candidate struct {
	Type  Type
	Watts Watts
}

// Result is the type chosen and the runners-up, best first.
type Result struct {
	Choice       Candidate
	Alternatives []Candidate
	Considered   int     // types that fit the request
	Utilization  float64 // the utilisation used
}

// Fit returns the type of the catalog that fits req (at least MinCPU
// vCPUs and MinRAMGiB memory, within the preferences) with the least
// estimated power; ties go to fewer vCPUs, then less memory, then the
// name. A malformed request is EINVALID; a request no type fits is
// EINFEASIBLE with Field naming the constraint that cannot be met
// (min_cpu, min_ram, family, processor, or min_cpu when each bound alone
// could be met but not both).
func (c *Catalog) Fit(req Request) (Result, error) {
	switch {
	case req.MinCPU <= 0:
		return Result{}, forecast.FieldErrorf(forecast.EINVALID, "min_cpu", "min_cpu must be a positive number of vCPUs")
	case !(req.MinRAMGiB > 0) || math.IsInf(req.MinRAMGiB, 0):
		return Result{}, forecast.FieldErrorf(forecast.EINVALID, "min_ram", "min_ram must be a positive amount of memory")
	case req.Utilization < 0 || req.Utilization > 1 || math.IsNaN(req.Utilization):
		return Result{}, forecast.FieldErrorf(forecast.EINVALID, "utilization", "utilization must be within 0..1")
	case req.Alternatives < 0:
		return Result{}, forecast.FieldErrorf(forecast.EINVALID, "alternatives", "alternatives must not be negative")
	}
	u := req.Utilization
	if u == 0 {
		u = c.file.Coefficients.CPUUtilization
	}
	p := c.file.Provider
	var pool []Type
	for _, t := range c.file.Types {
		unknown := !slices.ContainsFunc(t.Processors, func(s string) bool { return s != "Unknown" })
		if t.GPUs > 0 != req.GPU || (t.Burstable && !req.Burstable) || (unknown && !req.UnknownProcessor) {
			continue
		}
		pool = append(pool, t)
	}
	what := "non-burstable CPU"
	switch {
	case req.GPU && req.Burstable:
		what = "GPU"
	case req.GPU:
		what = "non-burstable GPU"
	case req.Burstable:
		what = "CPU"
	}
	if req.Family != "" {
		pool = slices.DeleteFunc(pool, func(t Type) bool { return !strings.EqualFold(t.Family, strings.TrimSpace(req.Family)) })
		if len(pool) == 0 {
			return Result{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "family", "no %s %s type in family %q", p, what, req.Family)
		}
		what += " " + req.Family
	}
	if req.Processor != "" {
		want := strings.ToLower(strings.TrimSpace(req.Processor))
		pool = slices.DeleteFunc(pool, func(t Type) bool {
			return !slices.ContainsFunc(t.Processors, func(s string) bool { return strings.Contains(strings.ToLower(s), want) })
		})
		if len(pool) == 0 {
			return Result{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "processor", "no %s %s type with a processor matching %q", p, what, req.Processor)
		}
		what += " " + req.Processor
	}
	var cands []Candidate
	maxCPU, maxRAM := 0, 0.0
	for _, t := range pool {
		maxCPU, maxRAM = max(maxCPU, t.VCPUs), max(maxRAM, t.MemoryGiB)
		if t.VCPUs >= req.MinCPU && t.MemoryGiB >= req.MinRAMGiB {
			cands = append(cands, Candidate{t, c.Estimate(t, u)})
		}
	}
	if len(cands) == 0 {
		switch {
		case maxCPU < req.MinCPU:
			return Result{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "min_cpu", "no %s %s type has %d vCPUs (the most: %d)", p, what, req.MinCPU, maxCPU)
		case maxRAM < req.MinRAMGiB:
			return Result{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "min_ram", "no %s %s type has %s GiB of memory (the most: %s GiB)", p, what, gib(req.MinRAMGiB), gib(maxRAM))
		default:
			return Result{}, forecast.FieldErrorf(forecast.EINFEASIBLE, "min_cpu", "no %s %s type has both %d vCPUs and %s GiB of memory", p, what, req.MinCPU, gib(req.MinRAMGiB))
		}
	}
	slices.SortFunc(cands, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.Watts.Total, b.Watts.Total), cmp.Compare(a.Type.VCPUs, b.Type.VCPUs),
			cmp.Compare(a.Type.MemoryGiB, b.Type.MemoryGiB), strings.Compare(a.Type.Name, b.Type.Name))
	})
	n := req.Alternatives
	if n == 0 {
		n = 5
	}
	return Result{Choice: cands[0], Alternatives: cands[1:min(len(cands), n+1)], Considered: len(cands), Utilization: u}, nil
}

func gib(v float64) string { return fmt.Sprintf("%g", v) }
