package main

import (
	"bytes"
	"encoding/csv"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

var update = flag.Bool("update", false, "rewrite data/regions.csv")

func inputs(t *testing.T) (tarballs, wheels string) {
	t.Helper()
	if tarballs = os.Getenv("CARBONGATE_CCF"); tarballs == "" {
		tarballs = services.Setup(t, "ccf.sh")
	}
	if wheels = os.Getenv("CARBONGATE_REGIONDATA"); wheels == "" {
		wheels = services.Setup(t, "regiondata.sh")
	}
	return tarballs, wheels
}

// TestTableUpToDate regenerates regions.csv and climatology.csv from the
// pinned inputs and compares them byte for byte with the committed ones.
func TestTableUpToDate(t *testing.T) {
	tarballs, wheels := inputs(t)
	for name, gen := range map[string]func() ([]byte, error){
		"regions.csv":     func() ([]byte, error) { return render("..", tarballs, wheels) },
		"climatology.csv": func() ([]byte, error) { return renderClimatology(wheels) },
	} {
		want, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "data", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make generate (or go test ./forecast/regions/gen -update)", name)
		}
	}
}

// TestCoveragePerList: for each provider list taken from its package,
// every region resolves to a zone or is a documented exception, and at
// least 95 % resolve. The figures are those of docs/regions.md.
func TestCoveragePerList(t *testing.T) {
	tarballs, wheels := inputs(t)
	b, err := render("..", tarballs, wheels)
	if err != nil {
		t.Fatal(err) // render fails on a region with neither zone nor exception
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	type count struct{ listed, resolved, excepted int }
	lists := map[string]*count{}
	for _, r := range recs[1:] {
		for _, src := range strings.Split(r[12], ";") {
			k := r[0] + " " + src
			if lists[k] == nil {
				lists[k] = &count{}
			}
			c := lists[k]
			c.listed++
			switch {
			case r[2] != "":
				c.resolved++
			case r[13] != "":
				c.excepted++
			default:
				t.Errorf("%s %s: no zone and no exception", r[0], r[1])
			}
		}
	}
	want := map[string][3]int{ // listed, resolved, excepted
		"aws botocore@1.44.8":             {39, 39, 0},
		"aws ccf-aws@0.15.0":              {27, 27, 0},
		"aws cloud-regions-info@1.0.1":    {32, 32, 0},
		"aws gsf-real-time-cloud":         {33, 33, 0},
		"azure carbon-aware-sdk@61420cc":  {55, 54, 1},
		"azure ccf-azure@1.8.0":           {78, 69, 9},
		"azure cloud-regions-info@1.0.1":  {60, 60, 0},
		"azure gsf-real-time-cloud":       {27, 27, 0},
		"gcp codecarbon@3.3.2":            {40, 40, 0},
		"gcp cloud-regions-info@1.0.1":    {29, 29, 0},
		"gcp gsf-real-time-cloud":         {43, 43, 0},
		"oracle cloud-regions-info@1.0.1": {27, 27, 0},
	}
	for k, c := range lists {
		t.Logf("%-34s %3d listed, %3d resolved (%.1f %%), %d excepted", k, c.listed, c.resolved, 100*float64(c.resolved)/float64(c.listed), c.excepted)
		if w, ok := want[k]; !ok || w != [3]int{c.listed, c.resolved, c.excepted} {
			t.Errorf("%s: %d listed, %d resolved, %d excepted; the test (and docs/regions.md) say %v", k, c.listed, c.resolved, c.excepted, w)
		}
	}
	for k, c := range lists {
		// Azure's CCF list holds geographies (asia, india, ...) that are
		// no region; the other lists are regions only.
		if k != "azure ccf-azure@1.8.0" && float64(c.resolved) < 0.95*float64(c.listed) {
			t.Errorf("%s: %d of %d resolved, under 95 %%", k, c.resolved, c.listed)
		}
	}
}
