package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestRegionsPerProvider(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"regions", "--provider", "Microsoft Azure"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"azure     uksouth ", "GB", "US-SW-AZPS", "(no zone: a geography",
		"azure: 101 regions, 91 with a zone (90.1 %), 90 with bundled zone data",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "aws ") || strings.Contains(s, "gcp ") {
		t.Errorf("other providers listed:\n%s", s)
	}
}

func TestRegionsJSON(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"regions", "--output", "json"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rows []regionRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]regionRow{}
	for _, r := range rows {
		byKey[r.Provider+":"+r.Region] = r
		if (r.Zone == "") == (r.Exception == "") {
			t.Errorf("%s %s: zone %q, exception %q", r.Provider, r.Region, r.Zone, r.Exception)
		}
	}
	if r := byKey["aws:us-east-1"]; r.Zone != "US-MIDA-PJM" || r.Data != "hourly" {
		t.Errorf("aws us-east-1 %+v", r)
	}
	if r := byKey["oracle:eu-frankfurt-1"]; r.Zone != "DE" || r.Data != "hourly" {
		t.Errorf("oracle eu-frankfurt-1 %+v", r)
	}
	if r := byKey["gcp:asia-northeast1"]; r.Zone != "JP-TK" || r.Data != "climatology" {
		t.Errorf("gcp asia-northeast1 %+v", r)
	}
}

func TestRegionsUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"regions", "--provider", "ibm"}, {"regions", "--output", "yaml"}, {"regions", "x"}} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
}
