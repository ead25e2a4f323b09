// Package instances maps a workload's size (vCPUs, memory, optionally a
// family or processor) to the cloud instance type that fits it with the
// least estimated power, with the Cloud Carbon Footprint (CCF) instance
// catalogs and energy coefficients generated into data/ (see
// data/NOTICE.md and the generator in gen/).
//
// Estimated power follows CCF's method for one instance running one hour:
//
//	compute = vCPUs × (min + u × (max − min))       watts per vCPU of the processor family
//	gpu     = GPUs × (min + u × (max − min))        watts per GPU of the GPU model
//	memory  = counted GB × memory watts per GB      (CCF's MEMORY_COEFFICIENT, kWh/GB-h × 1000)
//	watts   = PUE × (compute + gpu + memory)
//
// where u is the utilisation (CCF's default, 50 %). A type with several
// processor families takes their mean coefficient (the median when Sandy
// Bridge or Ivy Bridge is among them), and the provider's average when any
// family has no coefficient. CCF counts only the memory beyond what its
// processor coefficients already include: with the family's last listed
// type as its largest (vCPUs V, memory M), chips = ⌈V / 96⌉ (2 for AWS
// m5zn and z1d), and processor memory P GB per chip, the counted GB are
// (M/chips − P) / (M / memory) when M/chips > P, otherwise 0. AWS burstable
// types count no memory (as in CCF).
package instances

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/carbongate/carbongate/forecast"
)

// File is one provider's data file, as the generator writes it.
type File struct {
	Provider     string       `json:"provider"` // aws or azure
	Source       Source       `json:"source"`
	Coefficients Coefficients `json:"coefficients"`
	Types        []Type       `json:"types"` // in CCF's order: the last type of a family is its largest
}

// Source names the npm packages a file was generated from.
type Source struct {
	Package       string `json:"package"`
	Version       string `json:"version"`
	Integrity     string `json:"integrity"`
	CoreVersion   string `json:"core_version"`
	CoreIntegrity string `json:"core_integrity"`
	Licence       string `json:"licence"`
}

// Coefficients are CCF's energy coefficients of one provider.
type Coefficients struct {
	MinWatts            map[string]float64 `json:"min_watts"` // per vCPU (per GPU for GPU models), by processor
	MaxWatts            map[string]float64 `json:"max_watts"`
	MinWattsAvg         float64            `json:"min_watts_avg"` // when a processor has no coefficient
	MaxWattsAvg         float64            `json:"max_watts_avg"`
	MemoryGBPerChip     map[string]float64 `json:"memory_gb_per_chip"` // memory included in the processor coefficients
	MemoryGBPerChipAvg  float64            `json:"memory_gb_per_chip_avg"`
	MemoryWattsPerGB    float64            `json:"memory_watts_per_gb"`
	PUE                 float64            `json:"pue"`
	CPUUtilization      float64            `json:"cpu_utilization"` // 0..1
	VCPUsPerChip        int                `json:"vcpus_per_chip"`
	TwoChipFamilies     []string           `json:"two_chip_families,omitempty"`
	BurstableMemory     bool               `json:"burstable_memory"`      // whether burstable types count memory
	ServerLifespanHours float64            `json:"server_lifespan_hours"` // over which a host's embodied emissions are spread
}

// Type is one instance type.
type Type struct {
	Name          string   `json:"name"`   // m5.large; Azure: E2as v4
	Family        string   `json:"family"` // AWS family (m5); Azure series as CCF names it
	VCPUs         int      `json:"vcpus"`
	MemoryGiB     float64  `json:"memory_gib"`
	EmbodiedTCO2e float64  `json:"embodied_tco2e"` // CCF's embodied emissions of the host, metric tons CO2e
	Processors    []string `json:"processors"`
	GPUs          int      `json:"gpus,omitempty"`
	GPUProcessors []string `json:"gpu_processors,omitempty"`
	Burstable     bool     `json:"burstable,omitempty"`
}

// Encode writes f as JSON with one type per line (stable, diffable).
func Encode(f *File) ([]byte, error) {
	var b bytes.Buffer
	head := *f
	head.Types = nil
	h, err := json.MarshalIndent(head, "", "  ")
	if err != nil {
		return nil, err
	}
	// Replace the trailing `"types": null` with one line per type.
	h = bytes.TrimSuffix(h, []byte("\n}"))
	h = bytes.TrimSuffix(h, []byte(`  "types": null`))
	b.Write(h)
	b.WriteString("  \"types\": [\n")
	for i, t := range f.Types {
		line, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		b.WriteString("    ")
		b.Write(line)
		if i < len(f.Types)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

//go:embed data/*.json
var dataFS embed.FS

// Providers lists the providers with embedded data.
var Providers = []string{"aws", "azure"}

// Catalog is one provider's parsed data with the per-family figures the
// method needs. It is immutable and safe for concurrent use.
type Catalog struct {
	file    File
	largest map[string]Type // last listed type per family
}

var catalogs = sync.OnceValues(func() (map[string]*Catalog, error) {
	out := map[string]*Catalog{}
	for _, p := range Providers {
		b, err := dataFS.ReadFile("data/" + p + ".json")
		if err != nil {
			return nil, err
		}
		c, err := Parse(b)
		if err != nil {
			return nil, fmt.Errorf("data/%s.json: %w", p, err)
		}
		out[p] = c
	}
	return out, nil
})

// Parse reads a data file. A malformed file is EINVALID.
func Parse(b []byte) (*Catalog, error) {
	c := &Catalog{largest: map[string]Type{}}
	if err := json.Unmarshal(b, &c.file); err != nil {
		return nil, forecast.Errorf(forecast.EINVALID, "instance data: %v", err)
	}
	co := c.file.Coefficients
	if co.PUE <= 0 || co.VCPUsPerChip <= 0 || co.CPUUtilization < 0 || co.CPUUtilization > 1 || co.ServerLifespanHours <= 0 {
		return nil, forecast.Errorf(forecast.EINVALID, "instance data: bad coefficients")
	}
	for _, t := range c.file.Types {
		if t.Name == "" || t.VCPUs <= 0 || t.MemoryGiB <= 0 {
			return nil, forecast.Errorf(forecast.EINVALID, "instance data: bad type %q", t.Name)
		}
		c.largest[t.Family] = t
	}
	return c, nil
}

// Load returns the embedded catalog of provider (a canonical name: aws or
// azure). Another provider is ENOTFOUND.
func Load(provider string) (*Catalog, error) {
	all, err := catalogs()
	if err != nil {
		return nil, forecast.Errorf(forecast.EINTERNAL, "instance data: %v", err)
	}
	c, ok := all[strings.ToLower(strings.TrimSpace(provider))]
	if !ok {
		return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "provider", "no instance-type data for provider %q: want one of %s", provider, strings.Join(Providers, ", "))
	}
	return c, nil
}

// Provider returns the catalog's provider (aws, azure).
func (c *Catalog) Provider() string { return c.file.Provider }

// Source returns where the catalog's data comes from.
func (c *Catalog) Source() Source { return c.file.Source }

// Coefficients returns the catalog's energy coefficients (shared maps: do
// not modify).
func (c *Catalog) Coefficients() Coefficients { return c.file.Coefficients }

// Types returns a copy of the catalog's types in CCF's order.
func (c *Catalog) Types() []Type { return slices.Clone(c.file.Types) }

// Watts is the estimated power of t at utilisation u (0..1) by the method
// of the package doc, and its parts before PUE.
type Watts struct {
	Total, Compute, GPU, Memory float64
	MemoryGB                    float64 // the memory CCF counts
}

// Estimate returns the estimated power of t at utilisation u (0..1).
func (c *Catalog) Estimate(t Type, u float64) Watts {
	co := c.file.Coefficients
	var w Watts
	w.Compute = float64(t.VCPUs) * perUnit(co, t.Processors, u)
	if t.GPUs > 0 {
		w.GPU = float64(t.GPUs) * perUnit(co, t.GPUProcessors, u)
	}
	if !t.Burstable || co.BurstableMemory {
		w.MemoryGB = c.countedMemory(t)
	}
	w.Memory = w.MemoryGB * co.MemoryWattsPerGB
	w.Total = co.PUE * (w.Compute + w.GPU + w.Memory)
	return w
}

func perUnit(co Coefficients, procs []string, u float64) float64 {
	lo := combine(procs, co.MinWatts, co.MinWattsAvg)
	hi := combine(procs, co.MaxWatts, co.MaxWattsAvg)
	return lo + u*(hi-lo)
}

// combine is CCF's getWattsByAverageOrMedian with its fallback: the mean
// (the median with Sandy or Ivy Bridge), avg when any value is missing.
func combine(procs []string, by map[string]float64, avg float64) float64 {
	if len(procs) == 0 {
		return avg
	}
	vs := make([]float64, 0, len(procs))
	median := false
	for _, p := range procs {
		v, ok := by[p]
		if !ok || v == 0 {
			return avg
		}
		vs = append(vs, v)
		median = median || p == "Sandy Bridge" || p == "Ivy Bridge"
	}
	if median {
		sort.Float64s(vs)
		n := len(vs)
		if n%2 == 1 {
			return vs[n/2]
		}
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
}

func (c *Catalog) countedMemory(t Type) float64 {
	co := c.file.Coefficients
	big := c.largest[t.Family]
	chips := math.Ceil(float64(big.VCPUs) / float64(co.VCPUsPerChip))
	if slices.Contains(co.TwoChipFamilies, t.Family) {
		chips = 2
	}
	pm := 0.0
	for _, p := range t.Processors {
		v, ok := co.MemoryGBPerChip[p]
		if !ok {
			pm = 0
			break
		}
		pm += v / float64(len(t.Processors))
	}
	if pm == 0 {
		pm = co.MemoryGBPerChipAvg
	}
	delta := big.MemoryGiB/chips - pm
	if delta <= 0 {
		return 0
	}
	return delta / (big.MemoryGiB / t.MemoryGiB)
}
