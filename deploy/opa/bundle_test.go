package opa_test

import (
	"cmp"
	"fmt"
	"io/fs"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/deploy/opa"
	"github.com/carbongate/carbongate/forecast/regions"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	c, err := opa.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(c.CarbongateURL); err != nil || u.Scheme == "" || u.Host == "" {
		t.Errorf("carbongate_url %q is not an absolute URL", c.CarbongateURL)
	}
	if d, err := time.ParseDuration(c.Timeout); err != nil || d <= 0 || d >= 10*time.Second {
		t.Errorf("timeout %q: want a positive Go duration under the webhook's 10 s", c.Timeout)
	}
	if c.FailOpen {
		t.Error("fail_open is true; the default is fail-closed")
	}
	if c.CacheSeconds < 0 || c.CacheSeconds > 60 {
		t.Errorf("cache_seconds = %d, want 0..60 (short: a cached window's start ages)", c.CacheSeconds)
	}
}

func TestLoadLatency(t *testing.T) {
	t.Parallel()
	for _, p := range regions.Providers() {
		l, ok, err := opa.LoadLatency(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got, want := ok, p == "azure"; got != want {
			t.Fatalf("LoadLatency(%s) ok = %v, want %v", p, got, want)
		}
		if !ok {
			continue
		}
		if l.Date != "2026-07-30" || l.Unit != "ms" || l.Source == "" || l.Provider != p {
			t.Errorf("%s: provider %q, date %q, unit %q, source %q", p, l.Provider, l.Date, l.Unit, l.Source)
		}
		if got, want := len(l.RTT), 54; got != want {
			t.Errorf("%s: %d source regions, want %d", p, got, want)
		}
		for src, row := range l.RTT {
			if _, named := l.Regions[src]; !named {
				t.Errorf("%s: rtt source %s has no display name", p, src)
			}
			if len(row) != len(l.RTT) || row[src] != 0 {
				t.Errorf("%s: row %s has %d entries and self RTT %v, want %d and 0", p, src, len(row), row[src], len(l.RTT))
			}
			for dst, v := range row {
				if _, ok := l.RTT[dst]; !ok || v < 0 || (dst != src && v == 0) {
					t.Errorf("%s: rtt[%s][%s] = %v", p, src, dst, v)
				}
			}
		}
	}
}

// TestResidencyMatchesRegionTable checks residency/eu against the region
// table: every listed region exists, and for regions with a grid zone the
// zone's country (DK-DK2 → DK) is an EU member state exactly when the
// region is listed, with that country.
func TestResidencyMatchesRegionTable(t *testing.T) {
	t.Parallel()
	res, err := opa.LoadResidency()
	if err != nil {
		t.Fatal(err)
	}
	if got := len(res.MemberStates); got != 27 {
		t.Fatalf("%d member states, want 27", got)
	}
	tbl, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]regions.Region{}
	for _, r := range tbl.All() {
		known[r.Provider+"/"+r.Region] = r
	}
	for p, rs := range res.Regions {
		if !slices.Contains(regions.Providers(), p) {
			t.Errorf("unknown provider %s", p)
		}
		for name, country := range rs {
			if _, ok := known[p+"/"+name]; !ok {
				t.Errorf("%s %s is not in the region table", p, name)
			}
			if !slices.Contains(res.MemberStates, country) {
				t.Errorf("%s %s: %s is not an EU member state", p, name, country)
			}
		}
	}
	for _, r := range tbl.All() {
		if r.Zone == "" {
			continue
		}
		country, _, _ := strings.Cut(string(r.Zone), "-")
		listed, ok := res.Regions[r.Provider][r.Region]
		inEU := slices.Contains(res.MemberStates, country)
		switch {
		case inEU && !ok:
			t.Errorf("%s %s (%s, zone %s) is in the EU but not listed", r.Provider, r.Region, r.Location, r.Zone)
		case !inEU && ok:
			t.Errorf("%s %s (%s, zone %s) is listed but its zone is outside the EU", r.Provider, r.Region, r.Location, r.Zone)
		case ok && listed != country:
			t.Errorf("%s %s is listed in %s, its zone %s is in %s", r.Provider, r.Region, listed, r.Zone, country)
		}
	}
}

// TestLoadCandidates checks the shape of the derived index (its content is
// checked by deploy/opa/gen): one origin per region, each listing itself
// first at 0 ms, then the rest by round-trip time and name.
func TestLoadCandidates(t *testing.T) {
	t.Parallel()
	for _, p := range regions.Providers() {
		c, err := opa.LoadCandidates(p)
		if err != nil {
			t.Fatalf("LoadCandidates(%s): %v", p, err)
		}
		rs, err := opa.LoadRegions(p)
		if err != nil {
			t.Fatal(err)
		}
		_, hasLatency, err := opa.LoadLatency(p)
		if err != nil {
			t.Fatal(err)
		}
		if c.Provider != p || c.Latency != hasLatency || len(c.Origins) != len(rs.Regions) {
			t.Errorf("%s: provider %q, latency %v, %d origins; want %d origins, latency %v", p, c.Provider, c.Latency, len(c.Origins), len(rs.Regions), hasLatency)
		}
		for name, o := range c.Origins {
			if _, ok := rs.Regions[name]; !ok || len(o.Candidates) == 0 || o.Candidates[0].Region != name || o.Candidates[0].RTTms != 0 {
				t.Errorf("%s origin %s: not a region, or not its own first candidate", p, name)
				continue
			}
			if !slices.IsSortedFunc(o.Candidates, func(a, b opa.Candidate) int {
				return cmp.Or(cmp.Compare(a.RTTms, b.RTTms), cmp.Compare(a.Region, b.Region))
			}) {
				t.Errorf("%s origin %s: candidates not sorted by rtt_ms, region", p, name)
			}
		}
	}
	if _, err := opa.LoadCandidates("nimbus"); err == nil {
		t.Error("LoadCandidates(nimbus) succeeded")
	}
}

func TestDataTree(t *testing.T) {
	t.Parallel()
	var got []string
	err := fs.WalkDir(opa.Data(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range got {
		if !strings.HasSuffix(p, "/data.json") {
			t.Errorf("%s: OPA bundles load only files named data.json", p)
		}
	}
	for _, p := range regions.Providers() {
		if _, err := opa.LoadRegions(p); err != nil {
			t.Errorf("LoadRegions(%s): %v", p, err)
		}
	}
	if _, err := opa.LoadRegions("nimbus"); err == nil {
		t.Error("LoadRegions(nimbus) succeeded")
	}
}

func ExampleLoadRegions() {
	rs, err := opa.LoadRegions("azure")
	if err != nil {
		panic(err)
	}
	fmt.Println(rs.Regions["westeurope"].Zone, rs.Regions["swedencentral"].Zone)
	// Output: NL SE
}
