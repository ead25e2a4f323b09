package bundled_test

import (
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
	"github.com/carbongate/carbongate/forecast/dataset/bundled"
)

var zones = []forecast.Zone{
	"US-CAL-CISO", "US-MIDA-PJM", "US-TEX-ERCO", "US-NE-ISNE", "US-NY-NYIS", "US-FLA-FPL",
	"US-NW-BPAT", "DE", "NL", "ES", "SE", "PL",
}

func TestBundledLoadsCleanly(t *testing.T) {
	t.Parallel()
	start := time.Now()
	tables, issues, err := dataset.LoadFS(bundled.FS(), ".")
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	for _, is := range issues {
		t.Errorf("unexpected issue: %s", is)
	}
	t.Logf("loaded %d zones in %v", len(tables), elapsed)
	if got, want := len(tables), len(zones); got != want {
		t.Fatalf("zones=%d, want %d", got, want)
	}
	wantStart := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	wantEnd := time.Date(2021, 7, 1, 0, 0, 0, 0, time.UTC)
	for _, z := range zones {
		tb, ok := tables[z]
		if !ok {
			t.Errorf("zone %s missing", z)
			continue
		}
		if !tb.Start.Equal(wantStart) || !tb.End().Equal(wantEnd) {
			t.Errorf("%s covers %s..%s, want %s..%s", z, tb.Start, tb.End(), wantStart, wantEnd)
		}
		if got, want := len(tb.Lifecycle), len(tb.Direct); got != want {
			t.Errorf("%s: len(Lifecycle)=%d, want %d", z, got, want)
		}
		if len(tb.Sources) == 0 {
			t.Errorf("%s: no sources", z)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	a, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	b, err := bundled.Load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(a), len(zones); got != want {
		t.Fatalf("len=%d, want %d", got, want)
	}
	delete(a, "DE") // the map is the caller's own
	if _, ok := b["DE"]; !ok {
		t.Fatal("deleting from one result changed another")
	}
	s := b["DE"].Series(forecast.SignalDirect)
	if got, want := s.Len(), 13128; got != want {
		t.Fatalf("DE hours=%d, want %d", got, want)
	}
}

func BenchmarkLoadFS(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := dataset.LoadFS(bundled.FS(), "."); err != nil {
			b.Fatal(err)
		}
	}
}
