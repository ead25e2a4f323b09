// Command gen writes forecast/instances/data/{aws,azure}.json from the npm
// tarballs of the Cloud Carbon Footprint packages pinned in
// forecast/internal/pkgdata (Apache-2.0):
// the EC2 instance types and Azure VM types with their vCPUs, memory,
// embodied emissions, processor families, GPUs and burstable flag, and the
// energy coefficients of CCF's method (min/max watts per vCPU by processor,
// memory included per chip, memory watts per GB, PUE, default utilisation).
//
// The tarballs are fetched by test/setup/ccf.sh (npm pack of the pinned
// versions into ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/ccf); gen
// checks each against its pinned integrity before reading it:
//
//	go run ./forecast/instances/gen -tarballs "$(test/setup/ccf.sh)"
//
// (make generate does this). The test of this package fails while the
// files are stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/carbongate/carbongate/forecast/instances"
	"github.com/carbongate/carbongate/forecast/internal/pkgdata"
)

func main() {
	tarballs := flag.String("tarballs", pkgdata.CacheDir("ccf"), "directory holding the pinned npm tarballs (test/setup/ccf.sh)")
	out := flag.String("out", filepath.Join("forecast", "instances", "data"), "the data directory")
	flag.Parse()
	files, err := render(*tarballs)
	if err == nil {
		for name, b := range files {
			if err = os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// render returns the data files by name (aws.json, azure.json).
func render(dir string) (map[string][]byte, error) {
	core, err := pkgdata.ReadNPM(dir, pkgdata.CCFCore)
	if err != nil {
		return nil, err
	}
	procs, err := processors(core["package/dist/compute/ComputeProcessorTypes.js"])
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, build := range []func(string, map[string]string, resolver) (*instances.File, error){buildAWS, buildAzure} {
		f, err := build(dir, core, procs)
		if err != nil {
			return nil, err
		}
		b, err := instances.Encode(f)
		if err != nil {
			return nil, err
		}
		if _, err := instances.Parse(b); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Provider, err)
		}
		out[f.Provider+".json"] = b
	}
	return out, nil
}

func source(p pkgdata.NPM) instances.Source {
	return instances.Source{Package: p.Name, Version: p.Version, Integrity: p.Integrity,
		CoreVersion: pkgdata.CCFCore.Version, CoreIntegrity: pkgdata.CCFCore.Integrity, Licence: "Apache-2.0"}
}

// resolver turns references into core's processor names and lists.
type resolver func(v any) ([]string, error)

var enumRE = regexp.MustCompile(`COMPUTE_PROCESSOR_TYPES\["(\w+)"\] = "([^"]+)"`)

func processors(src string) (resolver, error) {
	names := map[string]string{}
	for _, m := range enumRE.FindAllStringSubmatch(src, -1) {
		names[m[1]] = m[2]
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("core: COMPUTE_PROCESSOR_TYPES not found")
	}
	one := func(r pkgdata.Ref) (string, error) {
		i := strings.LastIndex(string(r), "COMPUTE_PROCESSOR_TYPES.")
		if i < 0 {
			return "", fmt.Errorf("not a processor: %s", r)
		}
		n, ok := names[string(r)[i+len("COMPUTE_PROCESSOR_TYPES."):]]
		if !ok {
			return "", fmt.Errorf("unknown processor %s", r)
		}
		return n, nil
	}
	var res resolver
	res = func(v any) ([]string, error) {
		switch v := v.(type) {
		case pkgdata.Ref:
			if strings.Contains(string(v), "COMPUTE_PROCESSOR_TYPES.") {
				n, err := one(v)
				return []string{n}, err
			}
			// A named list of core (core_1.cascadeLakeSkylake).
			name := string(v)[strings.LastIndex(string(v), ".")+1:]
			lst, err := pkgdata.Find(src, "exports."+name)
			if err != nil {
				return nil, err
			}
			return res(lst)
		case []any:
			var out []string
			for _, e := range v {
				ns, err := res(e)
				if err != nil {
					return nil, err
				}
				out = append(out, ns...)
			}
			return out, nil
		}
		return nil, fmt.Errorf("not a processor list: %v", v)
	}
	return res, nil
}

func num(v any) (float64, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("not a number: %v", v)
	}
	return f, nil
}

// coefficients reads the CLOUD_CONSTANTS object of src.
func coefficients(src string, res resolver) (instances.Coefficients, error) {
	var co instances.Coefficients
	byProc := func(label string) (map[string]float64, error) {
		v, err := pkgdata.Find(src, label)
		if err != nil {
			return nil, err
		}
		o, ok := v.(pkgdata.Object)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", label)
		}
		out := map[string]float64{}
		for _, e := range o {
			ns, err := res(pkgdata.Ref(strings.TrimPrefix(e.Key, "\x00")))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
			if out[ns[0]], err = num(e.Val); err != nil {
				return nil, fmt.Errorf("%s: %w", label, err)
			}
		}
		return out, nil
	}
	scalar := func(label string) (float64, error) {
		v, err := pkgdata.Find(src, label)
		if err != nil {
			return 0, err
		}
		return num(v)
	}
	var err error
	if co.MinWatts, err = byProc("MIN_WATTS_BY_COMPUTE_PROCESSOR"); err != nil {
		return co, err
	}
	if co.MaxWatts, err = byProc("MAX_WATTS_BY_COMPUTE_PROCESSOR"); err != nil {
		return co, err
	}
	if co.MemoryGBPerChip, err = byProc("MEMORY_BY_COMPUTE_PROCESSOR"); err != nil {
		return co, err
	}
	for _, s := range []struct {
		label string
		dst   *float64
	}{{"MIN_WATTS_AVG", &co.MinWattsAvg}, {"MAX_WATTS_AVG", &co.MaxWattsAvg}, {"MEMORY_AVG", &co.MemoryGBPerChipAvg},
		{"MEMORY_COEFFICIENT", &co.MemoryWattsPerGB}, {"PUE_AVG", &co.PUE}, {"AVG_CPU_UTILIZATION_2020", &co.CPUUtilization},
		{"SERVER_EXPECTED_LIFESPAN", &co.ServerLifespanHours}} {
		if *s.dst, err = scalar(s.label); err != nil {
			return co, err
		}
	}
	co.MemoryWattsPerGB *= 1000 // kWh per GB-hour → W per GB
	co.CPUUtilization /= 100
	return co, nil
}

// chipsRE is core's getPhysicalChips: Math.ceil(largestInstanceTypevCpus / 96).
var chipsRE = regexp.MustCompile(`Math\.ceil\(largestInstanceTypevCpus / (\d+)\)`)

func vcpusPerChip(core map[string]string) (int, error) {
	m := chipsRE.FindStringSubmatch(core["package/dist/memory/helpers.js"])
	if m == nil {
		return 0, fmt.Errorf("core: getPhysicalChips not found")
	}
	var n int
	_, err := fmt.Sscan(m[1], &n)
	return n, err
}

// typeTable reads a family → size → [vCPUs, memory, embodied] table.
func typeTable(src, label string, name func(family, size string) string) ([]instances.Type, error) {
	v, err := pkgdata.Find(src, label)
	if err != nil {
		return nil, err
	}
	fams, ok := v.(pkgdata.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", label)
	}
	var out []instances.Type
	for _, fam := range fams {
		sizes, ok := fam.Val.(pkgdata.Object)
		if !ok {
			return nil, fmt.Errorf("%s.%s is not an object", label, fam.Key)
		}
		for _, s := range sizes {
			a, ok := s.Val.([]any)
			if !ok || len(a) < 2 {
				return nil, fmt.Errorf("%s.%s.%s: want [vCPUs, memory, embodied]", label, fam.Key, s.Key)
			}
			t := instances.Type{Name: name(fam.Key, s.Key), Family: fam.Key}
			vc, err := num(a[0])
			if err != nil {
				return nil, err
			}
			t.VCPUs = int(vc)
			if t.MemoryGiB, err = num(a[1]); err != nil {
				return nil, err
			}
			if len(a) > 2 {
				if t.EmbodiedTCO2e, err = num(a[2]); err != nil {
					return nil, err
				}
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// annotate sets processors, GPUs and the burstable flag from the maps.
func annotate(ts []instances.Type, src string, res resolver, procLabel, gpuLabel, gpuProcLabel string) error {
	maps := map[string]pkgdata.Object{}
	for _, l := range []string{procLabel, gpuLabel, gpuProcLabel} {
		v, err := pkgdata.Find(src, l)
		if err != nil {
			return err
		}
		o, ok := v.(pkgdata.Object)
		if !ok {
			return fmt.Errorf("%s is not an object", l)
		}
		maps[l] = o
	}
	for i := range ts {
		t := &ts[i]
		t.Processors = []string{"Unknown"}
		if v, ok := maps[procLabel].Get(t.Name); ok {
			ps, err := res(v)
			if err != nil {
				return fmt.Errorf("%s: %w", t.Name, err)
			}
			t.Processors = ps
		}
		if v, ok := maps[gpuLabel].Get(t.Name); ok {
			n, err := num(v)
			if err != nil {
				return err
			}
			t.GPUs = int(n)
			t.GPUProcessors = []string{"Unknown"}
			if v, ok := maps[gpuProcLabel].Get(t.Name); ok {
				ps, err := res(v)
				if err != nil {
					return fmt.Errorf("%s: %w", t.Name, err)
				}
				t.GPUProcessors = ps
			}
		}
	}
	return nil
}

func buildAWS(dir string, core map[string]string, res resolver) (*instances.File, error) {
	files, err := pkgdata.ReadNPM(dir, pkgdata.CCFAWS)
	if err != nil {
		return nil, err
	}
	types := files["package/dist/lib/AWSInstanceTypes.js"]
	consts := files["package/dist/domain/AwsFootprintEstimationConstants.js"]
	mem := files["package/dist/lib/AWSMemoryEstimatesBuilder.js"]
	if types == "" || consts == "" || mem == "" {
		return nil, fmt.Errorf("%s: expected files missing", pkgdata.CCFAWS.Tarball())
	}
	f := &instances.File{Provider: "aws", Source: source(pkgdata.CCFAWS)}
	if f.Coefficients, err = coefficients(consts, res); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	if f.Coefficients.VCPUsPerChip, err = vcpusPerChip(core); err != nil {
		return nil, err
	}
	// AWSMemoryEstimatesBuilder: ['m5zn', 'z1d'].includes(instanceFamily) ? 2 : getPhysicalChips(…)
	if !strings.Contains(mem, "['m5zn', 'z1d'].includes(instanceFamily)\n            ? 2") {
		return nil, fmt.Errorf("aws: the two-chip families of AWSMemoryEstimatesBuilder changed")
	}
	f.Coefficients.TwoChipFamilies = []string{"m5zn", "z1d"}
	name := func(fam, size string) string { return fam + "." + size }
	for _, label := range []string{"EC2_INSTANCE_TYPES", "INSTANCE_FAMILY_TO_INSTANCE_TYPE_MAPPING"} {
		ts, err := typeTable(types, label, name)
		if err != nil {
			return nil, fmt.Errorf("aws: %w", err)
		}
		f.Types = append(f.Types, ts...)
	}
	if err := annotate(f.Types, types, res, "INSTANCE_TYPE_COMPUTE_PROCESSOR_MAPPING", "GPU_INSTANCES_TYPES", "INSTANCE_TYPE_GPU_PROCESSOR_MAPPING"); err != nil {
		return nil, fmt.Errorf("aws: %w", err)
	}
	v, err := pkgdata.Find(types, "BURSTABLE_INSTANCE_BASELINE_UTILIZATION")
	if err != nil {
		return nil, err
	}
	burst, _ := v.(pkgdata.Object)
	for i := range f.Types {
		_, f.Types[i].Burstable = burst.Get(f.Types[i].Name)
	}
	return f, nil
}

func buildAzure(dir string, core map[string]string, res resolver) (*instances.File, error) {
	files, err := pkgdata.ReadNPM(dir, pkgdata.CCFAzure)
	if err != nil {
		return nil, err
	}
	types := files["package/dist/lib/VirtualMachineTypes.js"]
	consts := files["package/dist/domain/AzureFootprintEstimationConstants.js"]
	if types == "" || consts == "" {
		return nil, fmt.Errorf("%s: expected files missing", pkgdata.CCFAzure.Tarball())
	}
	f := &instances.File{Provider: "azure", Source: source(pkgdata.CCFAzure)}
	if f.Coefficients, err = coefficients(consts, res); err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	if f.Coefficients.VCPUsPerChip, err = vcpusPerChip(core); err != nil {
		return nil, err
	}
	f.Coefficients.BurstableMemory = true // ConsumptionManagement counts it
	ts, err := typeTable(types, "VIRTUAL_MACHINE_TYPE_SERIES_MAPPING", func(_, size string) string { return size })
	if err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	// A type listed in several series keeps its first listing.
	seen := map[string]bool{}
	for _, t := range ts {
		if !seen[t.Name] {
			seen[t.Name] = true
			t.Burstable = t.Family == "Bs-series"
			f.Types = append(f.Types, t)
		}
	}
	if err := annotate(f.Types, types, res, "INSTANCE_TYPE_COMPUTE_PROCESSOR_MAPPING", "GPU_VIRTUAL_MACHINE_TYPES", "GPU_VIRTUAL_MACHINE_TYPE_PROCESSOR_MAPPING"); err != nil {
		return nil, fmt.Errorf("azure: %w", err)
	}
	return f, nil
}
