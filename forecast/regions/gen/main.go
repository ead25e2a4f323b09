// Command gen writes forecast/regions/data/climatology.csv (annual
// figures from codecarbon's global_energy_mix.json for zones the GSF
// metadata has none for; see climatology.go) and
// forecast/regions/data/regions.csv, the cloud region table: every region of AWS, Azure, Google Cloud and Oracle Cloud that a
// pinned source lists, with its place, coordinates, Electricity Maps zone
// and the source of each fact. The sources (see ATTRIBUTION.md):
//
//   - the Cloud Carbon Footprint npm packages pinned in
//     forecast/internal/pkgdata (Apache-2.0): AWS and Azure region names
//     and CCF's region → Electricity Maps zone maps;
//   - PyPI wheels pinned below: botocore's endpoints.json (Apache-2.0; the
//     regions of AWS's public partitions), codecarbon's cloud/impact.csv
//     (MIT; Google Cloud region → country, state, city) and
//     cloud-regions-info's mappings (MIT; display names, countries and
//     coordinates of the four providers);
//   - the Carbon Aware SDK's azure-regions.json (MIT; Azure names and
//     coordinates), which no registry package ships: vendored unchanged in
//     sources/ at the commit pinned below, with its licence;
//   - the GSF Real Time Cloud metadata bundled in ../data (the providers'
//     own region → zone disclosures);
//   - hand.csv: one row per region whose zone no source gives or the
//     sources get wrong, each with its reason.
//
// A region's zone is, in this order: hand.csv's; the GSF metadata's (the
// providers' own disclosure, newest year); CCF's; the country's when
// Electricity Maps has a single zone for it (singleZone). A region left
// without a zone must have a hand.csv row with an empty zone saying why.
// Its place comes from hand.csv, codecarbon, cloud-regions-info, botocore
// or CCF, then GSF; its coordinates from the Carbon Aware SDK (the
// coordinates the SDK's own API answers with), cloud-regions-info, then
// GSF, whose geolocations have known errors (sa-east-1 in the Amazon
// basin).
//
//	go run ./forecast/regions/gen -tarballs "$(test/setup/ccf.sh)" -wheels "$(test/setup/regiondata.sh)"
//
// (make generate does this). The test of this package fails while the
// file is stale.
package main

import (
	"bytes"
	"encoding/csv"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast/internal/pkgdata"
)

// The PyPI pins; test/setup/regiondata.sh fetches the same versions.
var (
	pinBotocore   = pkgdata.Wheel{Name: "botocore", Version: "1.44.8", SHA256: "76342a76c338701db80dcb8afe1c9bd079283d6fffbb9d881442abb02a215043", Licence: "Apache-2.0"}
	pinCodecarbon = pkgdata.Wheel{Name: "codecarbon", Version: "3.3.2", SHA256: "05b31dea9dd26ed1e90947973c9ef20c87d127ea71fc32b4cb55a3ec512b8897", Licence: "MIT"}
	pinCRI        = pkgdata.Wheel{Name: "cloud-regions-info", Version: "1.0.1", SHA256: "8c21854e991214946dc17e0858b32244daa84cc1697d9eb647df89d2ced2c00c", Licence: "MIT"}
)

// The Carbon Aware SDK's azure-regions.json: the commit of
// Green-Software-Foundation/carbon-aware-sdk that last changed
// src/data/location-sources/azure-regions.json, and the file's sha256.
const (
	casdkCommit = "61420cc3a26a9dc3686fcb1aba70a95231c03e6c"
	casdkSHA256 = "64d289bcc5c71aa61edbb9b472774ea49a281165db47f5892f5d10f542f7b80d"
)

// placeholders are names in the CCF enums that are no region: billing
// buckets.
var placeholders = map[key]bool{
	{"aws", "unknown"}: true, {"azure", "unknown"}: true, {"azure", "unassigned"}: true, {"azure", "all regions"}: true,
}

func main() {
	tarballs := flag.String("tarballs", pkgdata.CacheDir("ccf"), "directory holding the pinned npm tarballs (test/setup/ccf.sh)")
	wheels := flag.String("wheels", pkgdata.CacheDir("regiondata"), "directory holding the pinned PyPI wheels (test/setup/regiondata.sh)")
	dir := flag.String("dir", filepath.Join("forecast", "regions"), "the package directory")
	flag.Parse()
	b, err := render(*dir, *tarballs, *wheels)
	if err == nil {
		err = os.WriteFile(filepath.Join(*dir, "data", "regions.csv"), b, 0o644)
	}
	if err == nil {
		b, err = renderClimatology(*wheels)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(*dir, "data", "climatology.csv"), b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// Header is the table's header; package regions parses the same columns.
var header = []string{"provider", "region", "zone", "location", "city", "state", "country", "latitude", "longitude",
	"zone_source", "place_source", "geo_source", "listed_by", "exception"}

// render reads every source and returns regions.csv.
func render(dir, tarballs, wheels string) ([]byte, error) {
	srcs, err := ccfRegions(tarballs)
	if err != nil {
		return nil, err
	}
	casdkPath := filepath.Join(dir, "gen", "sources", "casdk-azure-regions.json")
	if err := pkgdata.CheckSHA256(casdkPath, casdkSHA256); err != nil {
		return nil, err
	}
	for _, read := range []func() (*source, error){
		func() (*source, error) { return botocoreRegions(wheels) },
		func() (*source, error) { return codecarbonRegions(wheels) },
		func() (*source, error) { return criRegions(wheels) },
		func() (*source, error) { return casdkRegions(casdkPath) },
		func() (*source, error) {
			return gsfRegions(filepath.Join(dir, "data", "cloud_region_metadata.csv.gz"))
		},
	} {
		s, err := read()
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	hand, reasons, err := handRegions(filepath.Join(dir, "gen", "hand.csv"))
	if err != nil {
		return nil, err
	}
	rows, err := merge(srcs, hand, reasons)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(header)
	for _, r := range rows {
		w.Write(r)
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// byName returns the source named by prefix (before "@"), or nil.
func byName(srcs []*source, name string) *source {
	for _, s := range srcs {
		if n, _, _ := strings.Cut(s.name, "@"); n == name {
			return s
		}
	}
	return nil
}

// merge decides each region's row (see the package doc).
func merge(srcs []*source, hand *source, reasons map[key]string) ([][]string, error) {
	keys := map[key]bool{}
	for _, s := range srcs {
		for k := range s.facts {
			if !placeholders[k] {
				keys[k] = true
			}
		}
	}
	for k := range hand.facts {
		if !keys[k] {
			return nil, fmt.Errorf("hand.csv: %s %s is listed by no source", k.provider, k.region)
		}
	}
	sorted := slices.SortedFunc(func(yield func(key) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}, func(a, b key) int { return strings.Compare(a.provider+" "+a.region, b.provider+" "+b.region) })

	zoneOrder := []*source{hand, byName(srcs, "gsf-real-time-cloud"), byName(srcs, "ccf-aws"), byName(srcs, "ccf-azure")}
	placeOrder := []*source{hand, byName(srcs, "codecarbon"), byName(srcs, "cloud-regions-info"), byName(srcs, "botocore"), byName(srcs, "ccf-aws"), byName(srcs, "gsf-real-time-cloud")}
	geoOrder := []*source{byName(srcs, "carbon-aware-sdk"), byName(srcs, "cloud-regions-info"), byName(srcs, "gsf-real-time-cloud")}
	var rows [][]string
	var missing []string
	for _, k := range sorted {
		var listed []string
		for _, s := range srcs {
			if _, ok := s.facts[k]; ok && s.list {
				listed = append(listed, s.name)
			}
		}
		// The place.
		var loc, city, state, country, placeSrc string
		for _, s := range placeOrder {
			f, ok := s.facts[k]
			if !ok {
				continue
			}
			if country == "" && f.country != "" {
				country = f.country
			}
			if placeSrc == "" && (f.city != "" || f.location != "") {
				city, state, loc, placeSrc = f.city, f.state, f.location, s.name
				if loc == "" {
					loc = strings.Join(nonEmpty(city, state), ", ")
				}
			}
		}
		// The zone.
		zone, zoneSrc, exception := "", "", ""
		for _, s := range zoneOrder {
			f, ok := s.facts[k]
			if !ok || (f.zone == "" && s != hand) {
				continue
			}
			zone, zoneSrc = f.zone, s.name
			if s == hand {
				if zone == "" {
					exception = reasons[k]
				} else {
					zoneSrc = "hand: " + reasons[k]
				}
			}
			break
		}
		if zoneSrc == "" && country != "" && singleZone[country] {
			zone, zoneSrc = country, "country: Electricity Maps has one zone for "+country
		}
		if zoneSrc == "" {
			missing = append(missing, fmt.Sprintf("%s %s (%s, %s)", k.provider, k.region, loc, country))
		}
		if zone != "" {
			var others []string
			for _, s := range zoneOrder[1:] {
				if f, ok := s.facts[k]; ok && f.zone != "" && f.zone != zone {
					others = append(others, s.name+" says "+f.zone)
				}
			}
			if len(others) > 0 {
				zoneSrc += " (" + strings.Join(others, "; ") + ")"
			}
		}
		// The coordinates.
		lat, lon, geoSrc := "", "", ""
		for _, s := range geoOrder {
			if f, ok := s.facts[k]; ok && f.hasGeo {
				lat, lon, geoSrc = strconv.FormatFloat(f.lat, 'f', -1, 64), strconv.FormatFloat(f.lon, 'f', -1, 64), s.name
				break
			}
		}
		rows = append(rows, []string{k.provider, k.region, zone, loc, city, state, country, lat, lon,
			zoneSrc, placeSrc, geoSrc, strings.Join(listed, ";"), exception})
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%d regions have no zone and no hand.csv row saying why:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	return rows, nil
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
