package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/carbongate/carbongate/deploy/opa"
)

// TestCandidates checks the derivation on small tables. The "ties" case
// (with the bundle's Azure regions) and the "solo" case give the index
// entries the policy's Rego tests use (eastus2_ties and solo_index in
// admission_test.rego).
func TestCandidates(t *testing.T) {
	t.Parallel()
	azure, err := opa.LoadRegions("azure")
	if err != nil {
		t.Fatal(err)
	}
	us := map[string]opa.Region{
		"eastus":         {Zone: "US-MIDA-PJM"},
		"eastus2":        {Zone: "US-MIDA-PJM"},
		"centralus":      {Zone: "US-MIDW-MISO"},
		"northcentralus": {Zone: "US-MIDW-MISO"},
		"westus3":        {Zone: ""},
	}
	eu := map[string]opa.Region{"westeurope": {Zone: "NL"}, "swedencentral": {Zone: "SE"}, "uksouth": {Zone: "GB"}}
	type c = opa.Candidate
	type r = opa.Representative
	tests := []struct {
		name    string
		regions map[string]opa.Region
		rtt     map[string]map[string]float64 // nil: no latency data
		eu      map[string]string
		origin  string
		want    opa.Origin
	}{
		{
			name: "ties by name, unmeasured counted", regions: azure.Regions, origin: "eastus2",
			rtt: map[string]map[string]float64{"eastus2": {"eastus": 7, "centralus": 7, "northcentralus": 7}},
			want: opa.Origin{
				Unmeasured: len(azure.Regions) - 4, // all but the four measured
				Candidates: []c{
					{Region: "eastus2", Zone: "US-MIDA-PJM"},
					{Region: "centralus", Zone: "US-MIDW-MISO", RTTms: 7},
					{Region: "eastus", Zone: "US-MIDA-PJM", RTTms: 7},
					{Region: "northcentralus", Zone: "US-MIDW-MISO", RTTms: 7},
				},
				Representatives:   []r{{Zone: "US-MIDA-PJM", Region: "eastus2"}, {Zone: "US-MIDW-MISO", Region: "centralus", RTTms: 7}},
				RepresentativesEU: []r{},
			},
		},
		{
			name: "directional: the origin's row only", regions: us, origin: "eastus",
			rtt: map[string]map[string]float64{"eastus": {"eastus2": 50, "westus3": 60}, "eastus2": {"eastus": 5}},
			want: opa.Origin{
				Unmeasured: 2,
				Candidates: []c{
					{Region: "eastus", Zone: "US-MIDA-PJM"},
					{Region: "eastus2", Zone: "US-MIDA-PJM", RTTms: 50},
					{Region: "westus3", RTTms: 60},
				},
				Representatives:   []r{{Zone: "US-MIDA-PJM", Region: "eastus"}},
				RepresentativesEU: []r{},
			},
		},
		{
			name: "origin without a row: only itself", regions: us, origin: "westus3",
			rtt:  map[string]map[string]float64{"eastus": {"westus3": 60}},
			want: opa.Origin{Unmeasured: 4, Candidates: []c{{Region: "westus3"}}, Representatives: []r{}, RepresentativesEU: []r{}},
		},
		{
			name: "EU representatives skip regions outside the EU; matrix regions outside the table are ignored", regions: eu, origin: "uksouth",
			rtt: map[string]map[string]float64{"uksouth": {"westeurope": 9, "swedencentral": 30, "atlantis": 1}},
			eu:  map[string]string{"westeurope": "NL", "swedencentral": "SE"},
			want: opa.Origin{
				Candidates: []c{
					{Region: "uksouth", Zone: "GB"},
					{Region: "westeurope", Zone: "NL", RTTms: 9, EU: true},
					{Region: "swedencentral", Zone: "SE", RTTms: 30, EU: true},
				},
				Representatives:   []r{{Zone: "GB", Region: "uksouth"}, {Zone: "NL", Region: "westeurope", RTTms: 9}, {Zone: "SE", Region: "swedencentral", RTTms: 30}},
				RepresentativesEU: []r{{Zone: "NL", Region: "westeurope", RTTms: 9}, {Zone: "SE", Region: "swedencentral", RTTms: 30}},
			},
		},
		{
			name: "no latency data: the origin alone, nothing unmeasured", regions: eu, origin: "westeurope",
			eu: map[string]string{"westeurope": "NL"},
			want: opa.Origin{
				Candidates:        []c{{Region: "westeurope", Zone: "NL", EU: true}},
				Representatives:   []r{{Zone: "NL", Region: "westeurope"}},
				RepresentativesEU: []r{{Zone: "NL", Region: "westeurope"}},
			},
		},
		{
			name: "solo: one region without a zone", regions: map[string]opa.Region{"solo": {}}, origin: "solo",
			want: opa.Origin{Candidates: []c{{Region: "solo"}}, Representatives: []r{}, RepresentativesEU: []r{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var lat *opa.Latency
			if tt.rtt != nil {
				lat = &opa.Latency{RTT: tt.rtt}
			}
			got := candidates("p", tt.regions, lat, tt.eu)
			if got.Latency != (lat != nil) || len(got.Origins) != len(tt.regions) {
				t.Fatalf("latency %v, %d origins; want %v, %d", got.Latency, len(got.Origins), lat != nil, len(tt.regions))
			}
			if o := got.Origins[tt.origin]; !reflect.DeepEqual(o, tt.want) {
				t.Errorf("origin %s:\n got %+v\nwant %+v", tt.origin, o, tt.want)
			}
		})
	}
}

// TestEncodeCandidates checks that the hand-laid-out JSON decodes to what
// was encoded, empty lists included.
func TestEncodeCandidates(t *testing.T) {
	t.Parallel()
	for _, c := range []opa.Candidates{
		{Provider: "oracle", Source: "s <&>", Origins: map[string]opa.Origin{}},
		candidates("p", map[string]opa.Region{"a": {Zone: "X"}, "b": {}, "c": {Zone: "X"}}, &opa.Latency{RTT: map[string]map[string]float64{"a": {"b": 1.5, "c": 2}}}, map[string]string{"c": "NL"}),
	} {
		b, err := encodeCandidates(c)
		if err != nil {
			t.Fatal(err)
		}
		var got opa.Candidates
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip:\n got %+v\nwant %+v\n%s", got, c, b)
		}
	}
}
