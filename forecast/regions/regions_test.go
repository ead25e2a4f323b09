package regions_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/regions"
)

func TestLookupDefault(t *testing.T) {
	t.Parallel()
	tb, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		provider, region string
		zone             forecast.Zone
		code, msg        string
	}{
		{"azure", "uksouth", "GB", "", ""},
		{"azure", "JapanEast", "JP-TK", "", ""},
		{"Microsoft Azure", "northeurope", "IE", "", ""}, // GSF lists FI and IE; hand.csv: Dublin
		{"azure", "westus3", "US-SW-AZPS", "", ""},
		{"azure", "westus", "US-CAL-CISO", "", ""},
		{"amazon", "eu-north-1", "SE", "", ""},
		{"aws", "ca-west-1", "CA-AB", "", ""},
		{"gcp", "me-central1", "QA", "", ""},
		{"oci", "us-ashburn-1", "US-MIDA-PJM", "", ""},
		{"azure", "uksuoth", "", forecast.ENOTFOUND, `unknown azure region "uksuoth"; did you mean uksouth`},
		{"aws", "mars-1", "", forecast.ENOTFOUND, `unknown aws region "mars-1"`},
		{"ibm", "x", "", forecast.ENOTFOUND, "unknown cloud provider"},
		{"azure", "brazilus", "", forecast.EINFEASIBLE, "azure region brazilus is known but has no grid zone: a logical region with no documented site"},
		{"aws", "cn-north-1", "CN", "", ""},
		{"azure", "westeurop", "", forecast.ENOTFOUND, "did you mean westeurope"},
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
		if !strings.Contains(forecast.ErrorMessage(err), tc.msg) {
			t.Errorf("Lookup(%s, %s): message %q lacks %q", tc.provider, tc.region, forecast.ErrorMessage(err), tc.msg)
		}
	}
}

// TestEveryRegionResolves: every region of the table resolves to a zone
// or carries a documented exception, every zone has a source and every
// region a source that lists it.
func TestEveryRegionResolves(t *testing.T) {
	t.Parallel()
	tb, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tb.All() {
		got, err := tb.Lookup(r.Provider, r.Region)
		switch {
		case r.Exception != "":
			if forecast.ErrorCode(err) != forecast.EINFEASIBLE || !strings.Contains(forecast.ErrorMessage(err), r.Exception) {
				t.Errorf("%s %s: an exception, but Lookup says %v", r.Provider, r.Region, err)
			}
		case err != nil || got.Zone == "" || r.ZoneSource == "":
			t.Errorf("%s %s: zone %q (source %q), error %v", r.Provider, r.Region, got.Zone, r.ZoneSource, err)
		}
		if len(r.ListedBy) == 0 {
			t.Errorf("%s %s: listed by no source", r.Provider, r.Region)
		}
	}
}

// TestClimatologyIsLifecycle: the GSF annual figure serves the lifecycle
// signal only, and says so.
func TestClimatologyIsLifecycle(t *testing.T) {
	t.Parallel()
	tb, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	f, ok := tb.ClimatologyOf("DE", forecast.SignalLifecycle)
	if !ok || f.Value <= 0 || f.Source != regions.ClimatologySource || f.Year < 2020 {
		t.Errorf("DE lifecycle climatology %+v, %v", f, ok)
	}
	if _, ok := tb.ClimatologyOf("DE", forecast.SignalDirect); ok {
		t.Error("DE has a direct climatology; no bundled source gives one")
	}
}

func TestParseTableErrors(t *testing.T) {
	t.Parallel()
	const head = "provider,region,zone,location,city,state,country,latitude,longitude,zone_source,place_source,geo_source,listed_by,exception\n"
	for name, in := range map[string]string{
		"bad header":         "provider,region\n",
		"unknown provider":   head + "ibm,x,DE,,,,,,,s,,,s,\n",
		"bad zone":           head + "aws,x,de!,,,,,,,s,,,s,\n",
		"zone and exception": head + "aws,x,DE,,,,,,,s,,,s,why\n",
		"neither":            head + "aws,x,,,,,,,,s,,,s,\n",
		"bad latitude":       head + "aws,x,DE,,,,,91,0,s,,,s,\n",
		"twice":              head + "aws,x,DE,,,,,,,s,,,s,\naws,X,DE,,,,,,,s,,,s,\n",
		"wrong field count":  head + "aws,x\n",
	} {
		if _, err := regions.ParseTable(strings.NewReader(in), nil); forecast.ErrorCode(err) != forecast.EINVALID {
			t.Errorf("%s: %v, want EINVALID", name, err)
		}
	}
}

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"uksouth", "ukwest", "eastus", "eastus2", "westus"}
	if got := regions.Nearest("eastsu", names, 2); fmt.Sprint(got) != "[eastus eastus2]" {
		t.Errorf("Nearest(eastsu)=%v", got)
	}
	if got := regions.Nearest("zzzzzzzzzz", names, 3); len(got) != 0 {
		t.Errorf("Nearest(zzzzzzzzzz)=%v, want none", got)
	}
	if got := regions.Nearest(strings.Repeat("x", 1<<20), names, 3); len(got) > 3 {
		t.Errorf("Nearest(long)=%v", got)
	}
}

func ExampleTable_Lookup() {
	tb, err := regions.Default()
	if err != nil {
		panic(err)
	}
	r, err := tb.Lookup("azure", "uksouth")
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Provider, r.Region, r.Zone, r.Country)
	_, err = tb.Lookup("azure", "uksuoth")
	fmt.Println(forecast.ErrorCode(err), forecast.ErrorMessage(err))
	// Output:
	// azure uksouth GB GB
	// not_found unknown azure region "uksuoth"; did you mean uksouth?
}

// BenchmarkLookupMisspelt is the cost of an unknown name: the suggestions'
// edit distances. A 20-character name is compared with the names of
// similar length; a 4 KiB one with none.
func BenchmarkLookupMisspelt(b *testing.B) {
	tb, err := regions.Default()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{20, 4096} {
		name := strings.Repeat("x", n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if _, err := tb.Lookup("azure", name); forecast.ErrorCode(err) != forecast.ENOTFOUND {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestClimatologyFigures: zones without a GSF figure get codecarbon's
// lifecycle figure (Our World in Data / Ember), named as such, never a
// direct one; CA-AB and US-SW-AZPS have no figure of any signal.
func TestClimatologyFigures(t *testing.T) {
	t.Parallel()
	tb, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range []forecast.Zone{"MX", "MY-WM", "NO-NO1", "NO-NO2", "QA", "TH"} {
		f, ok := tb.ClimatologyOf(z, forecast.SignalLifecycle)
		if !ok || f.Value <= 0 || !strings.HasPrefix(f.Source, "codecarbon@") || !strings.HasSuffix(f.Source, "global_energy_mix.json:carbon_intensity") || f.Year < 2020 {
			t.Errorf("%s lifecycle climatology %+v, %v", z, f, ok)
		}
		if v, ok := tb.Climatology(z); !ok || v != f.Value {
			t.Errorf("%s Climatology %v, %v, want %v", z, v, ok, f.Value)
		}
		if _, ok := tb.ClimatologyOf(z, forecast.SignalDirect); ok {
			t.Errorf("%s has a direct climatology", z)
		}
	}
	for _, z := range []forecast.Zone{"CA-AB", "US-SW-AZPS"} {
		for _, s := range forecast.Signals {
			if f, ok := tb.ClimatologyOf(z, s); ok {
				t.Errorf("%s has a %s climatology %+v", z, s, f)
			}
		}
	}
}
