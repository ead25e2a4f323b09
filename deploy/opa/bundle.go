// Package opa embeds the data files of carbongate's OPA admission
// bundle (this directory), so that carbongate's own webhook decides from
// exactly the numbers the Rego policy reads. It holds no decision logic.
//
// OPA loads a bundle's data files from files named data.json and mounts
// each at its directory path, so the tree below is what the policy sees
// at data.carbongate:
//
//	config/data.json             defaults: carbongate_url, timeout, fail_open, cache_seconds
//	latency/<provider>/data.json P95 round-trip times between regions (azure only)
//	residency/eu/data.json       regions located in EU-27 member states, per provider
//	regions/<provider>/data.json region -> Electricity Maps zone, generated from forecast/regions
//	candidates/<provider>/data.json per origin region: the candidate regions by round-trip time,
//	                             generated from regions, latency and residency (what the policy reads)
//	instances/<provider>/data.json the instance types spec.instanceType is chosen from, in the
//	                             order of forecast/instances' Fit (aws and azure only), generated
package opa

import (
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"path"

	"github.com/carbongate/carbongate/forecast"
)

//go:embed carbongate
var files embed.FS

// Data returns the data tree, rooted like data.carbongate (see the package
// doc). It is read-only and shared.
func Data() fs.FS { return dataFS{} }

// dataFS serves the embedded carbongate directory as the root.
type dataFS struct{}

func (dataFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return files.Open(path.Join("carbongate", name))
}

// Config is config/data.json: the policy's defaults, which OPA's
// environment (CARBONGATE_URL, CARBONGATE_TIMEOUT, CARBONGATE_FAIL_OPEN,
// CARBONGATE_CACHE_SECONDS) overrides at run time.
type Config struct {
	CarbongateURL string `json:"carbongate_url"`
	Timeout       string `json:"timeout"` // Go duration, e.g. "2s"
	FailOpen      bool   `json:"fail_open"`
	CacheSeconds  int    `json:"cache_seconds"` // 0: no caching of /v1/schedule answers
}

// Latency is latency/<provider>/data.json.
type Latency struct {
	Provider  string            `json:"provider"`
	Source    string            `json:"source"`
	Statistic string            `json:"statistic"`
	Date      string            `json:"date"` // YYYY-MM-DD, the end of the measurement window
	Unit      string            `json:"unit"` // ms
	Regions   map[string]string `json:"regions"`
	// RTT[src][dst] is the round-trip time measured from src to dst; it is
	// directional and 0 for src == dst.
	RTT map[string]map[string]float64 `json:"rtt"`
}

// Residency is residency/eu/data.json.
type Residency struct {
	Description  string   `json:"description"`
	Derivation   string   `json:"derivation"`
	MemberStates []string `json:"member_states"` // ISO 3166-1 alpha-2
	// Regions[provider][region] is the member state a region is in; regions
	// outside the EU are absent.
	Regions map[string]map[string]string `json:"regions"`
}

// Regions is regions/<provider>/data.json.
type Regions struct {
	Provider string            `json:"provider"`
	Source   string            `json:"source"`
	Regions  map[string]Region `json:"regions"` // by the provider's region name
}

// Region is one cloud region of forecast/regions' table: its Electricity
// Maps zone ("" for a documented exception), place and country.
type Region struct {
	Zone     string `json:"zone"`
	Location string `json:"location"`
	Country  string `json:"country,omitempty"` // ISO 3166-1 alpha-2
}

// Candidates is candidates/<provider>/data.json: the regions, latency and
// residency files of one provider joined per origin region, so that the
// policy answers a review with one lookup instead of joins. It is derived
// (go run ./deploy/opa/gen), never edited.
type Candidates struct {
	Provider string `json:"provider"`
	Source   string `json:"source"`
	// Latency is whether the provider has a latency matrix; without one
	// only the origin itself is a candidate.
	Latency bool `json:"latency"`
	// Origins has one entry per region of the provider's regions file.
	Origins map[string]Origin `json:"origins"`
}

// Origin is what the policy needs for one origin region.
type Origin struct {
	// Unmeasured counts the provider's regions other than the origin that
	// have no round-trip time from it (0 without a latency matrix).
	Unmeasured int `json:"unmeasured"`
	// Candidates are the origin and every region of the provider with a
	// round-trip time from it, by RTTms then Region.
	Candidates []Candidate `json:"candidates"`
	// Representatives holds, for each zone of Candidates, its first
	// candidate in Candidates' order: the region that stands for the zone
	// whenever the latency bound keeps any of the zone's regions.
	Representatives []Representative `json:"representatives"`
	// RepresentativesEU is Representatives among the EU candidates only.
	RepresentativesEU []Representative `json:"representatives_eu"`
}

// Candidate is one region reachable from an origin.
type Candidate struct {
	Region string  `json:"region"`
	Zone   string  `json:"zone"`   // "" when the region has no grid zone
	RTTms  float64 `json:"rtt_ms"` // P95 round-trip time from the origin; 0 for the origin
	EU     bool    `json:"eu"`     // listed in residency/eu
}

// Representative is the region standing for a zone, and its round-trip
// time from the origin.
type Representative struct {
	Zone   string  `json:"zone"`
	Region string  `json:"region"`
	RTTms  float64 `json:"rtt_ms"`
}

// Instances is instances/<provider>/data.json: the instance types of the
// provider's catalog (forecast/instances) that Catalog.Fit considers by
// default (no burstable, GPU or unknown-processor types), at the default
// utilisation, in Fit's order (watts, then vCPUs, memory, name), without
// the types an earlier one dominates (at least as many vCPUs and as much
// memory).
// The first type with at least minCPU vCPUs and minRAM memory is then
// Fit's choice. It is derived (go run ./deploy/opa/gen), never edited.
//
// ByVCPUs answers the common request fast: for each vCPU count V of
// Types, the types with at least V vCPUs in Types' order, each with more
// memory than every one before it (the only ones a request for V vCPUs
// can get), by V in decimal.
type Instances struct {
	Provider    string                    `json:"provider"`
	Source      string                    `json:"source"`
	Utilization float64                   `json:"utilization"`
	Types       []InstanceType            `json:"types"`
	ByVCPUs     map[string][]InstanceType `json:"by_vcpus"`
}

// InstanceType is one type of Instances.
type InstanceType struct {
	Name      string  `json:"name"`
	VCPUs     int     `json:"vcpus"`
	MemoryGiB float64 `json:"memory_gib"`
	Watts     float64 `json:"watts"`
}

// LoadInstances reads the instance types of provider; a provider
// without instance data is ENOTFOUND.
func LoadInstances(provider string) (Instances, error) {
	var in Instances
	return in, load(path.Join("instances", provider, "data.json"), &in)
}

// LoadConfig reads config/data.json.
func LoadConfig() (Config, error) {
	var c Config
	return c, load("config/data.json", &c)
}

// LoadLatency reads the latency matrix of provider; ok is false when the
// provider has none.
func LoadLatency(provider string) (l Latency, ok bool, err error) {
	err = load(path.Join("latency", provider, "data.json"), &l)
	if errors.Is(err, fs.ErrNotExist) {
		return Latency{}, false, nil
	}
	return l, err == nil, err
}

// LoadResidency reads residency/eu/data.json.
func LoadResidency() (Residency, error) {
	var r Residency
	return r, load("residency/eu/data.json", &r)
}

// LoadRegions reads the regions of provider (one of regions.Providers); an
// unknown provider is ENOTFOUND.
func LoadRegions(provider string) (Regions, error) {
	var r Regions
	return r, load(path.Join("regions", provider, "data.json"), &r)
}

// LoadCandidates reads the candidate index of provider (one of
// regions.Providers); an unknown provider is ENOTFOUND.
func LoadCandidates(provider string) (Candidates, error) {
	var c Candidates
	return c, load(path.Join("candidates", provider, "data.json"), &c)
}

func load(name string, v any) error {
	b, err := fs.ReadFile(Data(), name)
	if errors.Is(err, fs.ErrNotExist) {
		return &forecast.Error{Code: forecast.ENOTFOUND, Message: "opa bundle: no " + name, Err: err}
	}
	if err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "opa bundle: reading " + name, Err: err}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &forecast.Error{Code: forecast.EINTERNAL, Message: "opa bundle: decoding " + name, Err: err}
	}
	return nil
}

// Admission is the bundle's data as carbongate's own webhook reads it
// (admission.BundleSource): the regions, EU residency and round-trip
// times of a provider, in plain types.
type Admission struct{}

// RegionZones returns the regions of provider: name → zone.
func (Admission) RegionZones(provider string) (map[string]string, error) {
	rs, err := LoadRegions(provider)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rs.Regions))
	for name, r := range rs.Regions {
		out[name] = r.Zone
	}
	return out, nil
}

// EURegions returns the regions of provider in an EU-27 member state.
func (Admission) EURegions(provider string) (map[string]bool, error) {
	res, err := LoadResidency()
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(res.Regions[provider]))
	for name := range res.Regions[provider] {
		out[name] = true
	}
	return out, nil
}

// RTT returns the round-trip times of provider, nil when it has none.
func (Admission) RTT(provider string) (map[string]map[string]float64, error) {
	l, ok, err := LoadLatency(provider)
	if !ok {
		return nil, err
	}
	return l.RTT, nil
}
