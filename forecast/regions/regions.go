// Package regions maps cloud regions to Electricity Maps zones with the
// Green Software Foundation "Real Time Cloud" region metadata (see
// ATTRIBUTION.md). The metadata has one row per year, provider and region;
// the Table keeps, for each (provider, region), the row of the latest year.
//
// Rules, in the order they apply:
//   - Providers are canonical names aws, gcp, azure and oracle; Lookup also
//     accepts amazon, "Amazon Web Services", google, "Google Cloud",
//     microsoft, "Microsoft Azure", oci and "Oracle Cloud Infrastructure",
//     case-insensitively. Region names are case-insensitive.
//   - A region whose latest-year row has no em-zone-id is unmapped: Lookup
//     returns EINVALID ("region X has no Electricity Maps zone").
//   - A region listed in several zones in its latest year (the metadata
//     lists Azure's northeurope under both FI and IE) is ambiguous: Lookup
//     returns EINVALID naming the candidate zones rather than guessing.
//   - Climatology(zone) is the mean annual grid intensity
//     (grid-carbon-intensity-average-consumption-annual) over the rows of
//     that zone in the latest year in which any row of the zone has one.
package regions

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/carbongate/carbongate/forecast"
)

// Region is one cloud region and its grid zone, from the latest year that
// lists it.
type Region struct {
	Provider      string        // canonical: aws, gcp, azure or oracle
	Region        string        // the provider's region name, as spelled in the metadata
	Zone          forecast.Zone // Electricity Maps zone; "" when unmapped or ambiguous
	Location      string        // human-readable location
	Year          int           // the year of the row
	GridIntensity float64       // annual grid intensity, average consumption, gCO2eq/kWh; 0 if absent
	// Latitude and Longitude locate the region (degrees) when HasGeo: the
	// latest year's geolocation that has one.
	Latitude, Longitude float64
	HasGeo              bool
}

// Table is a parsed region table. It is immutable: methods return copies,
// and a Table is safe for concurrent use.
type Table struct {
	regions   []Region                  // latest-year row per region, sorted by (provider, region)
	byKey     map[key]int               // index into regions
	ambiguous map[key][]Region          // latest-year rows of regions listed in several zones
	clim      map[forecast.Zone]float64 // Climatology
}

type key struct{ provider, region string }

// row is one line of the metadata.
type row struct {
	Region
	hasGI bool
	line  int
}

// providerList names the canonical providers, for messages.
const providerList = "aws, gcp, azure, oracle"

// CanonicalProvider returns the canonical name of a provider name or alias
// (see the package doc), and false for an unknown provider.
func CanonicalProvider(name string) (string, bool) {
	switch strings.ToLower(strings.Join(strings.Fields(name), " ")) {
	case "aws", "amazon", "amazon web services":
		return "aws", true
	case "gcp", "google", "google cloud", "google cloud platform":
		return "gcp", true
	case "azure", "microsoft", "microsoft azure":
		return "azure", true
	case "oracle", "oci", "oracle cloud", "oracle cloud infrastructure":
		return "oracle", true
	}
	return "", false
}

//go:embed data/cloud_region_metadata.csv.gz
var embedded []byte

var defaultTable = sync.OnceValues(func() (*Table, error) {
	zr, err := gzip.NewReader(bytes.NewReader(embedded))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return Parse(zr)
})

// Default returns the table of the embedded metadata. It is parsed on the
// first call; the Table is immutable and shared.
func Default() (*Table, error) { return defaultTable() }

// Columns read from the metadata; the others are ignored.
const (
	colYear     = "year"
	colProvider = "cloud-provider"
	colRegion   = "cloud-region"
	colZone     = "em-zone-id"
	colLocation = "location"
	colGrid     = "grid-carbon-intensity-average-consumption-annual"
	colGeo      = "geolocation" // optional: "latitude, longitude"
)

// Parse reads region metadata in the Real Time Cloud CSV layout (a header
// naming at least year, cloud-provider, cloud-region, em-zone-id, location
// and grid-carbon-intensity-average-consumption-annual; geolocation,
// "latitude, longitude", is read when present). Malformed input (missing
// column, bad year, unknown provider, bad zone id, intensity or
// geolocation) is EINVALID naming the line.
func Parse(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		return nil, parseError(0, "cannot read the header: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	need := []string{colYear, colProvider, colRegion, colZone, colLocation, colGrid}
	idx := make([]int, len(need))
	for i, n := range need {
		j, ok := col[n]
		if !ok {
			return nil, parseError(1, "no %s column", n)
		}
		idx[i] = j
	}
	var rows []row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			return nil, parseError(line, "malformed CSV: %v", err)
		}
		get := func(i int) string {
			if idx[i] < len(rec) {
				return strings.TrimSpace(rec[idx[i]])
			}
			return ""
		}
		rw := row{line: line}
		if rw.Year, err = strconv.Atoi(get(0)); err != nil {
			return nil, parseError(line, "year %q is not a number", get(0))
		}
		p, ok := CanonicalProvider(get(1))
		if !ok {
			return nil, parseError(line, "unknown cloud provider %q", get(1))
		}
		rw.Provider = p
		if rw.Region.Region = get(2); rw.Region.Region == "" {
			return nil, parseError(line, "empty cloud-region")
		}
		if z := get(3); z != "" {
			zone, err := forecast.ParseZone(z)
			if err != nil {
				return nil, parseError(line, "em-zone-id: %s", forecast.ErrorMessage(err))
			}
			rw.Zone = zone
		}
		rw.Location = get(4)
		if g := get(5); g != "" {
			v, err := strconv.ParseFloat(g, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, parseError(line, "%s %q is not a non-negative number", colGrid, g)
			}
			rw.GridIntensity, rw.hasGI = v, true
		}
		if j, ok := col[colGeo]; ok && j < len(rec) && strings.TrimSpace(rec[j]) != "" {
			if rw.Latitude, rw.Longitude, rw.HasGeo = parseGeo(rec[j]); !rw.HasGeo {
				return nil, parseError(line, "%s %q is not \"latitude, longitude\" in degrees", colGeo, strings.TrimSpace(rec[j]))
			}
		}
		rows = append(rows, rw)
	}
	return build(rows), nil
}

// parseGeo reads "latitude, longitude" in degrees.
func parseGeo(s string) (lat, lon float64, ok bool) {
	a, b, found := strings.Cut(s, ",")
	if !found {
		return 0, 0, false
	}
	lat, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	lon, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if err1 != nil || err2 != nil || !(lat >= -90 && lat <= 90) || !(lon >= -180 && lon <= 180) {
		return 0, 0, false
	}
	return lat, lon, true
}

func parseError(line int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if line > 0 {
		msg = fmt.Sprintf("cloud region metadata line %d: %s", line, msg)
	} else {
		msg = "cloud region metadata: " + msg
	}
	return forecast.Errorf(forecast.EINVALID, "%s", msg)
}

func build(rows []row) *Table {
	t := &Table{byKey: map[key]int{}, ambiguous: map[key][]Region{}, clim: map[forecast.Zone]float64{}}

	// Latest-year rows per region, in file order; and the latest
	// geolocation of each region, for latest rows that lack one.
	latest := map[key][]row{}
	geo := map[key]row{}
	var keys []key
	for _, rw := range rows {
		k := key{rw.Provider, strings.ToLower(rw.Region.Region)}
		if g, ok := geo[k]; rw.HasGeo && (!ok || rw.Year > g.Year) {
			geo[k] = rw
		}
		cur, seen := latest[k]
		switch {
		case !seen:
			keys = append(keys, k)
			latest[k] = []row{rw}
		case rw.Year > cur[0].Year:
			latest[k] = []row{rw}
		case rw.Year == cur[0].Year:
			latest[k] = append(cur, rw)
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.provider, b.provider); c != 0 {
			return c
		}
		return strings.Compare(a.region, b.region)
	})
	for _, k := range keys {
		rs := latest[k]
		reg := rs[0].Region
		var zones []forecast.Zone
		for _, rw := range rs {
			if rw.Zone != "" && !slices.Contains(zones, rw.Zone) {
				zones = append(zones, rw.Zone)
			}
		}
		if len(zones) > 1 {
			var locs []string
			var amb []Region
			for _, rw := range rs {
				amb = append(amb, rw.Region)
				locs = append(locs, rw.Location)
			}
			t.ambiguous[k] = amb
			reg.Zone, reg.Location, reg.GridIntensity = "", strings.Join(locs, "; "), 0
		} else if len(rs) > 1 {
			// Same year, same zone (or none): prefer a row with a zone, then
			// one with an intensity; file order breaks ties.
			best := rs[0]
			for _, rw := range rs[1:] {
				if (best.Zone == "" && rw.Zone != "") || (best.Zone == rw.Zone && !best.hasGI && rw.hasGI) {
					best = rw
				}
			}
			reg = best.Region
		}
		if g, ok := geo[k]; ok && !reg.HasGeo {
			reg.Latitude, reg.Longitude, reg.HasGeo = g.Latitude, g.Longitude, true
		}
		t.byKey[k] = len(t.regions)
		t.regions = append(t.regions, reg)
	}

	// Climatology: per zone, mean over the latest year with any value.
	type acc struct {
		year, n int
		sum     float64
	}
	accs := map[forecast.Zone]*acc{}
	for _, rw := range rows {
		if rw.Zone == "" || !rw.hasGI {
			continue
		}
		a := accs[rw.Zone]
		switch {
		case a == nil || rw.Year > a.year:
			accs[rw.Zone] = &acc{year: rw.Year, n: 1, sum: rw.GridIntensity}
		case rw.Year == a.year:
			a.n++
			a.sum += rw.GridIntensity
		}
	}
	for z, a := range accs {
		t.clim[z] = a.sum / float64(a.n)
	}
	return t
}

// Lookup returns the region of provider (a canonical name or alias) named
// region (case-insensitive). It returns ENOTFOUND for an unknown provider or
// region, and EINVALID when the region is known but has no Electricity Maps
// zone, or several zones, in its latest year; the Region is then returned
// too, so that callers can name its location.
func (t *Table) Lookup(provider, region string) (Region, error) {
	p, ok := CanonicalProvider(provider)
	if !ok {
		return Region{}, forecast.Errorf(forecast.ENOTFOUND, "unknown cloud provider %q: want one of %s", provider, providerList)
	}
	k := key{p, strings.ToLower(strings.TrimSpace(region))}
	i, ok := t.byKey[k]
	if !ok {
		return Region{}, forecast.Errorf(forecast.ENOTFOUND, "unknown %s region %q", p, region)
	}
	reg := t.regions[i]
	if amb, ok := t.ambiguous[k]; ok {
		var c []string
		for _, a := range amb {
			c = append(c, fmt.Sprintf("%s (%s)", a.Zone, a.Location))
		}
		return reg, forecast.Errorf(forecast.EINVALID, "region %s of %s is listed in several Electricity Maps zones in %d: %s; name the zone instead",
			reg.Region, p, reg.Year, strings.Join(c, ", "))
	}
	if reg.Zone == "" {
		return reg, forecast.Errorf(forecast.EINVALID, "region %s of %s has no Electricity Maps zone", reg.Region, p)
	}
	return reg, nil
}

// Regions returns the regions mapped to zone, sorted by provider then
// region name (lower-cased).
func (t *Table) Regions(zone forecast.Zone) []Region {
	var out []Region
	for _, r := range t.regions {
		if r.Zone == zone && zone != "" {
			out = append(out, r)
		}
	}
	return out
}

// Climatology returns the zone's annual grid intensity in gCO2eq/kWh: the
// mean of grid-carbon-intensity-average-consumption-annual over the rows of
// the zone in the latest year in which any of them has a value. It returns
// false when no row of the zone has one.
func (t *Table) Climatology(zone forecast.Zone) (float64, bool) {
	v, ok := t.clim[zone]
	return v, ok
}

// All returns every region, one per (provider, region), sorted by provider
// then region name (lower-cased). Unmapped and ambiguous regions have an
// empty Zone.
func (t *Table) All() []Region { return slices.Clone(t.regions) }
