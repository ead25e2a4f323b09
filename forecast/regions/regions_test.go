package regions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
)

const header = "year,cloud-provider,cloud-region,cfe-region,em-zone-id,wt-region-id,location,geolocation,grid-carbon-intensity-average-consumption-annual\n"

const fixture = header +
	`2024,Amazon Web Services,eu-north-1,Sweden,SE,SE,Europe (Stockholm),"59.3,18.0",30.5
2021,Amazon Web Services,eu-north-1,Spain,ES,ES,Europe (Stockholm),"59.3,18.0",200
2023,Amazon Web Services,eu-north-1,Sweden,SE,SE,Europe (Stockholm),"59.3,18.0",20
2024,Amazon Web Services,ca-west-1,,,,Canada West (Calgary),"51.0,-114.0",
2023,Google Cloud,europe-west3,Frankfurt,DE,DE,Frankfurt,"50.1,8.6",350
2020,Google Cloud,europe-west3,Frankfurt,NL,NL,Frankfurt,"50.1,8.6",999
2023,Microsoft Azure,GermanyWestCentral,Germany,DE,DE,Germany,"50.1,8.6",
2022,Microsoft Azure,germanywestcentral,Germany,DE,DE,Germany,"50.1,8.6",370
2023,Amazon Web Services,eu-central-1,Germany,DE,DE,Europe (Frankfurt),"50.1,8.6",330
2023,Microsoft Azure,northeurope,Finland,FI,FI,Finland,"60.2,24.6",82
2023,Microsoft Azure,northeurope,Ireland,IE,IE,Ireland,"53.3,-6.2",403
2024,Oracle Cloud Infrastructure,eu-frankfurt-1,Germany,DE,DE,Frankfurt,"50.1,8.6",
`

func parse(t *testing.T) *regions.Table {
	t.Helper()
	tb, err := regions.Parse(strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestLookup(t *testing.T) {
	t.Parallel()
	tb := parse(t)
	tests := []struct {
		name, provider, region string
		zone                   forecast.Zone
		year                   int
		grid                   float64
		code                   string // error code, "" for none
		msg                    string // substring of the error
	}{
		{name: "latest year wins", provider: "aws", region: "eu-north-1", zone: "SE", year: 2024, grid: 30.5},
		{name: "alias amazon", provider: "amazon", region: "eu-north-1", zone: "SE", year: 2024, grid: 30.5},
		{name: "full name, any case", provider: "AMAZON web services", region: "EU-North-1", zone: "SE", year: 2024, grid: 30.5},
		{name: "gcp older zone ignored", provider: "gcp", region: "europe-west3", zone: "DE", year: 2023, grid: 350},
		{name: "alias google", provider: "Google", region: "europe-west3", zone: "DE", year: 2023, grid: 350},
		{name: "alias Google Cloud", provider: "Google Cloud", region: "europe-west3", zone: "DE", year: 2023, grid: 350},
		{name: "azure without intensity in latest year", provider: "Microsoft Azure", region: "germanywestcentral", zone: "DE", year: 2023, grid: 0},
		{name: "oracle alias oci", provider: "oci", region: "eu-frankfurt-1", zone: "DE", year: 2024},
		{name: "unmapped region", provider: "aws", region: "ca-west-1", code: forecast.EINVALID, msg: "region ca-west-1 of aws has no Electricity Maps zone"},
		{name: "ambiguous region", provider: "azure", region: "northeurope", code: forecast.EINVALID, msg: "several Electricity Maps zones in 2023: FI (Finland), IE (Ireland)"},
		{name: "unknown region", provider: "aws", region: "mars-1", code: forecast.ENOTFOUND, msg: `unknown aws region "mars-1"`},
		{name: "unknown provider", provider: "ibm", region: "eu-de", code: forecast.ENOTFOUND, msg: `unknown cloud provider "ibm"`},
		{name: "region of another provider", provider: "gcp", region: "eu-north-1", code: forecast.ENOTFOUND},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := tb.Lookup(tc.provider, tc.region)
			if got := forecast.ErrorCode(err); got != tc.code {
				t.Fatalf("code=%q (%v), want %q", got, err, tc.code)
			}
			if tc.code != "" {
				if !strings.Contains(forecast.ErrorMessage(err), tc.msg) {
					t.Fatalf("message %q lacks %q", forecast.ErrorMessage(err), tc.msg)
				}
				return
			}
			if r.Zone != tc.zone || r.Year != tc.year || r.GridIntensity != tc.grid {
				t.Fatalf("got %+v, want zone %s year %d grid %v", r, tc.zone, tc.year, tc.grid)
			}
		})
	}
}

func TestRegionsAndAll(t *testing.T) {
	t.Parallel()
	tb := parse(t)
	var got []string
	for _, r := range tb.Regions("DE") {
		got = append(got, r.Provider+"/"+r.Region)
	}
	want := []string{"aws/eu-central-1", "azure/GermanyWestCentral", "gcp/europe-west3", "oracle/eu-frankfurt-1"}
	if !slices.Equal(got, want) {
		t.Errorf("Regions(DE)=%v, want %v", got, want)
	}
	if rs := tb.Regions("NL"); len(rs) != 0 {
		t.Errorf("Regions(NL)=%v, want none (only an old row maps there)", rs)
	}
	if rs := tb.Regions(""); len(rs) != 0 {
		t.Errorf("Regions(\"\")=%v, want none", rs)
	}
	all := tb.All()
	if got, want := len(all), 7; got != want {
		t.Fatalf("len(All)=%d, want %d", got, want)
	}
	all[0].Zone = "XX" // a copy
	if tb.All()[0].Zone == "XX" {
		t.Error("All returned the table's own slice")
	}
}

func TestClimatology(t *testing.T) {
	t.Parallel()
	tb := parse(t)
	tests := []struct {
		zone forecast.Zone
		want float64
		ok   bool
	}{
		{"DE", (350 + 330) / 2.0, true}, // 2023 rows with a value; 2022 and 2020 ignored
		{"SE", 30.5, true},
		{"ES", 200, true}, // only a 2021 row, which is still the zone's latest
		{"FI", 82, true},
		{"NL", 999, true},
		{"XX", 0, false},
	}
	for _, tc := range tests {
		got, ok := tb.Climatology(tc.zone)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Climatology(%s)=%v,%v, want %v,%v", tc.zone, got, ok, tc.want, tc.ok)
		}
	}
}

func TestGeolocation(t *testing.T) {
	t.Parallel()
	tb := parse(t)
	r, err := tb.Lookup("gcp", "europe-west3")
	if err != nil {
		t.Fatal(err)
	}
	if !r.HasGeo || r.Latitude != 50.1 || r.Longitude != 8.6 {
		t.Errorf("europe-west3 at %v, %v (%v), want 50.1, 8.6", r.Latitude, r.Longitude, r.HasGeo)
	}
	noGeo, err := regions.Parse(strings.NewReader(header + "2024,aws,r,,SE,,,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := noGeo.Lookup("aws", "r"); r.HasGeo {
		t.Errorf("a region without geolocation has one: %+v", r)
	}
	// The bundled table: Azure's westeurope is in the Netherlands, and a
	// latest row without geolocation takes an earlier year's.
	def, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := def.Lookup("azure", "westeurope"); err != nil || !r.HasGeo || r.Latitude != 51.9167 || r.Longitude != 4.5 {
		t.Errorf("westeurope: %+v, %v; want 51.9167, 4.5", r, err)
	}
	older, err := regions.Parse(strings.NewReader(header + "2021,aws,r,,SE,,,\"1.5, 2.5\",\n2024,aws,r,,SE,,,,\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := older.Lookup("aws", "r"); !r.HasGeo || r.Year != 2024 || r.Latitude != 1.5 || r.Longitude != 2.5 {
		t.Errorf("latest row without geolocation: %+v, want 2024's row at 2021's 1.5, 2.5", r)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, data, msg string }{
		{"empty", "", "cannot read the header"},
		{"missing column", "year,cloud-provider,cloud-region\n", "no em-zone-id column"},
		{"bad year", header + "20x4,Amazon Web Services,r,,SE,,,,\n", `line 2: year "20x4"`},
		{"unknown provider", header + "2024,IBM Cloud,r,,SE,,,,\n", `line 2: unknown cloud provider "IBM Cloud"`},
		{"bad zone", header + "2024,aws,r,,S E,,,,\n", "line 2: em-zone-id"},
		{"bad intensity", header + "2024,aws,r,,SE,,,,-3\n", "line 2: grid-carbon-intensity-average-consumption-annual \"-3\""},
		{"empty region", header + "2024,aws,,,SE,,,,\n", "line 2: empty cloud-region"},
		{"bad quote", header + "2024,aws,\"r,,SE,,,,\n", "malformed CSV"},
		{"bad geolocation", header + "2024,aws,r,,SE,,,\"north, 8\",\n", `line 2: geolocation "north, 8"`},
		{"geolocation off the globe", header + "2024,aws,r,,SE,,,\"95, 8\",\n", `line 2: geolocation "95, 8"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := regions.Parse(strings.NewReader(tc.data))
			if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
				t.Fatalf("code=%q (%v), want %q", got, err, want)
			}
			if !strings.Contains(forecast.ErrorMessage(err), tc.msg) {
				t.Fatalf("message %q lacks %q", forecast.ErrorMessage(err), tc.msg)
			}
		})
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	tb, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider, region string
		zone             forecast.Zone
		code             string
	}{
		{"aws", "eu-north-1", "SE", ""},   // 2021 row says ES; latest (2024) says SE
		{"gcp", "europe-west3", "DE", ""}, // 2020 row says NL
		{"azure", "westeurope", "NL", ""},
		{"azure", "southcentralus", "US-TEX-ERCO", ""},
		{"aws", "us-east-1", "US-MIDA-PJM", ""},
		{"gcp", "us-west1", "US-NW-BPAT", ""},
		{"azure", "westus3", "", forecast.EINVALID},     // no zone id
		{"gcp", "europe-west10", "", forecast.EINVALID}, // no zone id in 2024
		{"azure", "northeurope", "", forecast.EINVALID}, // FI and IE rows
		{"oracle", "us-ashburn-1", "", forecast.ENOTFOUND},
	}
	for _, tc := range tests {
		r, err := tb.Lookup(tc.provider, tc.region)
		if got := forecast.ErrorCode(err); got != tc.code {
			t.Errorf("Lookup(%s, %s): code %q (%v), want %q", tc.provider, tc.region, got, err, tc.code)
			continue
		}
		if tc.code == "" && r.Zone != tc.zone {
			t.Errorf("Lookup(%s, %s)=%s, want %s", tc.provider, tc.region, r.Zone, tc.zone)
		}
	}
	if got, want := len(tb.All()), 103; got != want {
		t.Errorf("len(All)=%d, want %d", got, want)
	}
	for _, z := range []forecast.Zone{"DE", "SE", "US-CAL-CISO"} {
		if v, ok := tb.Climatology(z); !ok || v <= 0 {
			t.Errorf("Climatology(%s)=%v,%v", z, v, ok)
		}
	}
}

func ExampleTable_Lookup() {
	tb, err := regions.Default()
	if err != nil {
		panic(err)
	}
	r, err := tb.Lookup("Amazon Web Services", "eu-north-1")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Provider, r.Region, r.Zone, r.Year)
	_, err = tb.Lookup("azure", "westus3")
	fmt.Println(forecast.ErrorCode(err), forecast.ErrorMessage(err))
	// Output:
	// aws eu-north-1 SE 2024
	// invalid region westus3 of azure has no Electricity Maps zone
}
