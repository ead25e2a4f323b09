package main

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/forecast/internal/pkgdata"
)

// fact is what one source says of one region; empty fields say nothing.
type fact struct {
	zone                 string // Electricity Maps zone key
	noZone               bool   // the source lists the region with no zone
	location             string // the source's display name
	city, state, country string // country: ISO 3166-1 alpha-2
	lat, lon             float64
	hasGeo               bool
}

// source is one input: a name for the table's source columns and its facts
// by (provider, region).
type source struct {
	name  string
	facts map[key]fact
	list  bool // a provider's region list: its regions are counted for coverage
}

type key struct{ provider, region string }

func newSource(name string, list bool) *source {
	return &source{name: name, facts: map[key]fact{}, list: list}
}

// ccfRegions reads the region enums and Electricity Maps maps of the CCF
// aws and azure packages.
func ccfRegions(dir string) ([]*source, error) {
	aws, err := pkgdata.ReadNPM(dir, pkgdata.CCFAWS)
	if err != nil {
		return nil, err
	}
	az, err := pkgdata.ReadNPM(dir, pkgdata.CCFAzure)
	if err != nil {
		return nil, err
	}
	awsSrc := newSource("ccf-aws@"+pkgdata.CCFAWS.Version, true)
	enumRE := regexp.MustCompile(`AWS_REGIONS\["(\w+)"\] = "([^"]+)"`)
	js := aws["package/dist/lib/AWSRegions.js"]
	byConst := map[string]string{}
	for _, m := range enumRE.FindAllStringSubmatch(js, -1) {
		byConst[m[1]] = m[2]
	}
	if len(byConst) == 0 {
		return nil, fmt.Errorf("ccf aws: AWS_REGIONS not found")
	}
	names, err := pkgdata.Find(js, "exports.AWS_MAPPED_REGION_NAMES_TO_CODES")
	if err != nil {
		return nil, err
	}
	display := map[string]string{}
	for _, e := range names.(pkgdata.Object) {
		if r, ok := e.Val.(pkgdata.Ref); ok {
			display[byConst[strings.TrimPrefix(string(r), "AWS_REGIONS.")]] = e.Key
		}
	}
	zones, err := pkgdata.Find(js, "exports.AWS_MAPPED_REGIONS_TO_ELECTRICITY_MAPS_ZONES")
	if err != nil {
		return nil, err
	}
	for _, e := range zones.(pkgdata.Object) {
		region := byConst[strings.TrimPrefix(e.Key, "\x00AWS_REGIONS.")]
		if region == "" {
			return nil, fmt.Errorf("ccf aws: unknown key %q", e.Key)
		}
		f := fact{location: display[region]}
		f.zone, f.noZone = zoneOf(e.Val)
		awsSrc.facts[key{"aws", strings.ToLower(region)}] = f
	}
	for _, region := range byConst {
		if _, ok := awsSrc.facts[key{"aws", strings.ToLower(region)}]; !ok {
			awsSrc.facts[key{"aws", strings.ToLower(region)}] = fact{noZone: true, location: display[region]}
		}
	}

	azSrc := newSource("ccf-azure@"+pkgdata.CCFAzure.Version, true)
	js = az["package/dist/lib/AzureRegions.js"]
	regs, err := pkgdata.Find(js, "exports.AZURE_REGIONS")
	if err != nil {
		return nil, err
	}
	constName := map[string]string{}
	for _, e := range regs.(pkgdata.Object) {
		o, ok := e.Val.(pkgdata.Object)
		if !ok {
			return nil, fmt.Errorf("ccf azure: %s is not an object", e.Key)
		}
		n, _ := o.Get("name")
		name, _ := n.(string)
		if name == "" {
			return nil, fmt.Errorf("ccf azure: %s has no name", e.Key)
		}
		constName[e.Key] = name
		azSrc.facts[key{"azure", strings.ToLower(name)}] = fact{noZone: true}
	}
	zones, err = pkgdata.Find(js, "exports.AZURE_MAPPED_REGIONS_TO_ELECTRICITY_MAPS_ZONES")
	if err != nil {
		return nil, err
	}
	for _, e := range zones.(pkgdata.Object) {
		c := strings.TrimSuffix(strings.TrimPrefix(e.Key, "\x00exports.AZURE_REGIONS."), ".name")
		name, ok := constName[c]
		if !ok {
			return nil, fmt.Errorf("ccf azure: unknown key %q", e.Key)
		}
		f := fact{}
		f.zone, f.noZone = zoneOf(e.Val)
		azSrc.facts[key{"azure", strings.ToLower(name)}] = f
	}
	return []*source{awsSrc, azSrc}, nil
}

func zoneOf(v any) (string, bool) {
	if s, ok := v.(string); ok && s != "" {
		return s, false
	}
	return "", true // null
}

// gsfRegions reads the GSF Real Time Cloud metadata: per region, the row
// of its latest year (several rows of that year naming different zones: no
// zone, the hand table decides).
func gsfRegions(path string) (*source, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(zr).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("gsf: %w", err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[strings.TrimPrefix(h, "\ufeff")] = i
	}
	type latest struct {
		year  int
		facts []fact
	}
	by := map[key]*latest{}
	providers := map[string]string{"Amazon Web Services": "aws", "Google Cloud": "gcp", "Microsoft Azure": "azure", "Oracle Cloud Infrastructure": "oracle"}
	for _, r := range recs[1:] {
		p, ok := providers[r[col["cloud-provider"]]]
		if !ok {
			return nil, fmt.Errorf("gsf: unknown provider %q", r[col["cloud-provider"]])
		}
		year, err := strconv.Atoi(r[col["year"]])
		if err != nil {
			return nil, fmt.Errorf("gsf: year %q", r[col["year"]])
		}
		f := fact{zone: strings.TrimSpace(r[col["em-zone-id"]]), location: strings.TrimSpace(r[col["location"]])}
		f.noZone = f.zone == ""
		if a, b, ok := strings.Cut(r[col["geolocation"]], ","); ok {
			la, e1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
			lo, e2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
			f.lat, f.lon, f.hasGeo = la, lo, e1 == nil && e2 == nil
		}
		k := key{p, strings.ToLower(strings.TrimSpace(r[col["cloud-region"]]))}
		if badGSFGeo[k] {
			f.hasGeo = false
		}
		switch l := by[k]; {
		case l == nil || year > l.year:
			by[k] = &latest{year, []fact{f}}
		case year == l.year:
			l.facts = append(l.facts, f)
		}
	}
	s := newSource("gsf-real-time-cloud", true)
	for k, l := range by {
		f := l.facts[0]
		for _, g := range l.facts[1:] {
			if g.zone != f.zone {
				f.zone, f.noZone = "", false // conflicting: neither
			}
		}
		s.facts[k] = f
	}
	return s, nil
}

// badGSFGeo are regions whose GSF geolocation is far from the place the
// same row names: Dallas at 44.9° N 123.3° W (Oregon), Columbus at 41.4° N
// 97.4° W (Nebraska; Google's us-east5 is Columbus, Ohio).
var badGSFGeo = map[key]bool{{"gcp", "us-south1"}: true, {"gcp", "us-east5"}: true}

// casdkRegions reads the Carbon Aware SDK's azure-regions.json (names and
// coordinates; vendored under sources/, see ATTRIBUTION.md).
func casdkRegions(path string) (*source, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m map[string]struct{ Latitude, Longitude, Name string }
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := newSource("carbon-aware-sdk@"+casdkCommit[:7], true)
	for name, r := range m {
		la, e1 := strconv.ParseFloat(r.Latitude, 64)
		lo, e2 := strconv.ParseFloat(r.Longitude, 64)
		f := fact{}
		// "0, 0" marks a region whose place the SDK does not know.
		f.lat, f.lon, f.hasGeo = la, lo, e1 == nil && e2 == nil && (la != 0 || lo != 0)
		s.facts[key{"azure", strings.ToLower(name)}] = f
	}
	return s, nil
}

// botocoreRegions reads the regions of AWS's public partitions from
// botocore's endpoints.json.
func botocoreRegions(dir string) (*source, error) {
	const path = "botocore/data/endpoints.json"
	files, err := pkgdata.ReadWheel(dir, pinBotocore, path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Partitions []struct {
			Partition string
			Regions   map[string]struct{ Description string }
		}
	}
	if err := json.Unmarshal(files[path], &doc); err != nil {
		return nil, fmt.Errorf("botocore: %w", err)
	}
	s := newSource("botocore@"+pinBotocore.Version, true)
	for _, p := range doc.Partitions {
		if !publicPartitions[p.Partition] {
			continue
		}
		for name, r := range p.Regions {
			s.facts[key{"aws", strings.ToLower(name)}] = fact{location: r.Description}
		}
	}
	return s, nil
}

// publicPartitions are the AWS partitions whose regions anyone can use; the
// others (aws-iso*) are air-gapped regions for government customers.
var publicPartitions = map[string]bool{"aws": true, "aws-cn": true, "aws-us-gov": true, "aws-eusc": true}

// codecarbonRegions reads codecarbon's cloud/impact.csv (Google Cloud
// regions: country, state, city).
func codecarbonRegions(dir string) (*source, error) {
	const path = "codecarbon/data/cloud/impact.csv"
	files, err := pkgdata.ReadWheel(dir, pinCodecarbon, path)
	if err != nil {
		return nil, err
	}
	recs, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(files[path], []byte("\ufeff")))).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("codecarbon: %w", err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	s := newSource("codecarbon@"+pinCodecarbon.Version, true)
	for _, r := range recs[1:] {
		if r[col["provider"]] != "gcp" {
			continue
		}
		iso3 := r[col["countryIsoCode"]]
		cc, ok := iso3to2[iso3]
		if !ok {
			return nil, fmt.Errorf("codecarbon: country code %q not in iso3to2", iso3)
		}
		region := strings.ToLower(r[col["region"]])
		if fix, ok := codecarbonNames[region]; ok {
			region = fix
		}
		s.facts[key{"gcp", region}] = fact{city: r[col["city"]], state: r[col["state"]], country: cc}
	}
	return s, nil
}

// codecarbonNames corrects region names misspelt in codecarbon's table.
var codecarbonNames = map[string]string{"me-cenrtal1": "me-central1"}

// criRegions reads cloud-regions-info's mappings (display names, countries,
// coordinates) of AWS, Azure, Google Cloud and Oracle Cloud.
func criRegions(dir string) (*source, error) {
	files := map[string]string{"aws": "aws_regions.json", "azure": "azure_regions.json", "gcp": "gcp_regions.json", "oracle": "oci_regions.json"}
	var paths []string
	for _, f := range files {
		paths = append(paths, "cloud_regions_info/mappings/"+f)
	}
	sort.Strings(paths)
	got, err := pkgdata.ReadWheel(dir, pinCRI, paths...)
	if err != nil {
		return nil, err
	}
	s := newSource("cloud-regions-info@"+pinCRI.Version, true)
	for p, f := range files {
		var m map[string]struct {
			Location, Country   string
			Latitude, Longitude float64
		}
		if err := json.Unmarshal(got["cloud_regions_info/mappings/"+f], &m); err != nil {
			return nil, fmt.Errorf("cloud-regions-info %s: %w", f, err)
		}
		for name, r := range m {
			cc, ok := countryCode[r.Country]
			if !ok {
				return nil, fmt.Errorf("cloud-regions-info %s: country %q not in countryCode", f, r.Country)
			}
			fa := fact{location: r.Location, country: cc, lat: r.Latitude, lon: r.Longitude, hasGeo: true}
			if p == "oracle" {
				fa.city, fa.state, _ = strings.Cut(r.Location, ", ")
			}
			s.facts[key{p, strings.ToLower(name)}] = fa
		}
	}
	return s, nil
}

// handRegions reads hand.csv: rows that decide a region's zone (and where
// given its place) where the sources do not, or disagree, each with its
// reason.
func handRegions(path string) (*source, map[key]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comment = '#'
	header, err := cr.Read()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	want := "provider,region,zone,city,state,country,reason"
	if strings.Join(header, ",") != want {
		return nil, nil, fmt.Errorf("%s: header %q, want %q", path, strings.Join(header, ","), want)
	}
	s := newSource("hand", false)
	reasons := map[key]string{}
	for {
		r, err := cr.Read()
		if err == io.EOF {
			return s, reasons, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if r[6] == "" {
			return nil, nil, fmt.Errorf("%s: %s %s has no reason", path, r[0], r[1])
		}
		k := key{r[0], r[1]}
		if _, dup := reasons[k]; dup {
			return nil, nil, fmt.Errorf("%s: %s %s twice", path, r[0], r[1])
		}
		s.facts[k] = fact{zone: r[2], noZone: r[2] == "", city: r[3], state: r[4], country: r[5]}
		reasons[k] = r[6]
	}
}
