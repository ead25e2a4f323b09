package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/carbongate/carbongate/forecast/internal/pkgdata"
)

// climHeader is the header of data/climatology.csv: per zone and signal an
// annual figure the GSF metadata lacks, with its source, column and year.
var climHeader = []string{"zone", "signal", "value", "year", "source", "scope"}

// countryFigures are the zones with no GSF annual figure whose grid is the
// whole (or nearly the whole) country of an ISO 3166-1 alpha-3 code in
// codecarbon's global_energy_mix.json. Its carbon_intensity is Our World in
// Data's carbon_intensity_elec (Ember's yearly electricity data), a
// generation-based figure on a life-cycle basis, so it feeds the lifecycle
// signal only. CA-AB and US-SW-AZPS are left out: Canada's and the United
// States' averages are far from Alberta's and Arizona's grids.
var countryFigures = map[string]struct{ iso3, scope string }{
	"CN":     {"CHN", "country (mainland China)"},
	"MX":     {"MEX", "country"},
	"QA":     {"QAT", "country"},
	"TH":     {"THA", "country"},
	"MY-WM":  {"MYS", "country (Malaysia; the zone is Peninsular Malaysia)"},
	"NO-NO1": {"NOR", "country (Norway; the zone is bidding zone NO1)"},
	"NO-NO2": {"NOR", "country (Norway; the zone is bidding zone NO2)"},
}

// renderClimatology reads codecarbon's global_energy_mix.json and returns
// climatology.csv.
func renderClimatology(wheels string) ([]byte, error) {
	const path = "codecarbon/data/private_infra/global_energy_mix.json"
	files, err := pkgdata.ReadWheel(wheels, pinCodecarbon, path)
	if err != nil {
		return nil, err
	}
	var mix map[string]struct {
		Intensity *float64 `json:"carbon_intensity"`
		Year      int      `json:"year"`
	}
	if err := json.Unmarshal(files[path], &mix); err != nil {
		return nil, fmt.Errorf("codecarbon %s: %w", path, err)
	}
	zones := make([]string, 0, len(countryFigures))
	for z := range countryFigures {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Write(climHeader)
	src := "codecarbon@" + pinCodecarbon.Version + ":" + path + ":carbon_intensity"
	for _, z := range zones {
		cf := countryFigures[z]
		m, ok := mix[cf.iso3]
		if !ok || m.Intensity == nil || m.Year == 0 {
			return nil, fmt.Errorf("codecarbon %s: no carbon_intensity and year for %s", path, cf.iso3)
		}
		w.Write([]string{z, "lifecycle", strconv.FormatFloat(*m.Intensity, 'f', -1, 64), strconv.Itoa(m.Year), src, cf.scope})
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}
