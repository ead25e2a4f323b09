package backfill

import (
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

var day0 = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)

func testPlan(zones []forecast.Zone, days int) Plan {
	return Plan{Zones: zones, From: day0, To: day0.AddDate(0, 0, days-1), Every: 24 * time.Hour, Horizon: 96 * time.Hour}
}

func TestShardsCoverExactlyOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note   string
		zones  []forecast.Zone
		days   int
		shards int
	}{
		{"one shard", []forecast.Zone{"DE", "SE"}, 10, 1},
		{"even split", []forecast.Zone{"DE", "SE"}, 10, 4},
		{"uneven split", []forecast.Zone{"DE", "SE", "PL"}, 7, 5},
		{"more shards than units", []forecast.Zone{"DE"}, 3, 5},
		{"twelve zones a year", []forecast.Zone{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "B1", "B2", "B3"}, 366, 7},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			p := testPlan(tt.zones, tt.days)
			all := p.AllUnits()
			if got, want := len(all), len(tt.zones)*tt.days; got != want {
				t.Fatalf("units=%d, want %d", got, want)
			}
			seen := map[unitKey]int{}
			minSize, maxSize := len(all), 0
			for i := range tt.shards {
				p.Shards, p.ShardIndex = tt.shards, i
				if err := p.Validate(); err != nil {
					t.Fatal(err)
				}
				us := p.Units()
				minSize, maxSize = min(minSize, len(us)), max(maxSize, len(us))
				for j, u := range us {
					seen[keyOf(u)]++
					// Contiguous: within a zone, consecutive issue times.
					if j > 0 && us[j-1].Zone == u.Zone && !u.IssuedAt.Equal(us[j-1].IssuedAt.Add(p.Every)) {
						t.Errorf("shard %d: %v follows %v", i, u, us[j-1])
					}
				}
			}
			for _, u := range all {
				if n := seen[keyOf(u)]; n != 1 {
					t.Errorf("unit %s %s covered %d times", u.Zone, u.IssuedAt.Format(time.RFC3339), n)
				}
			}
			if len(seen) != len(all) {
				t.Errorf("shards hold %d distinct units, plan has %d", len(seen), len(all))
			}
			if maxSize-minSize > 1 {
				t.Errorf("shard sizes %d..%d, want balanced (differ by ≤ 1)", minSize, maxSize)
			}
		})
	}
}

func TestPlanValidate(t *testing.T) {
	t.Parallel()
	ok := testPlan([]forecast.Zone{"DE"}, 3)
	tests := []struct {
		note  string
		edit  func(*Plan)
		field string
	}{
		{"no zones", func(p *Plan) { p.Zones = nil }, "zones"},
		{"duplicate zone", func(p *Plan) { p.Zones = []forecast.Zone{"DE", "DE"} }, "zones"},
		{"from off the hour", func(p *Plan) { p.From = p.From.Add(time.Minute) }, "from"},
		{"to before from", func(p *Plan) { p.To = p.From.Add(-time.Hour) }, "to"},
		{"every not hours", func(p *Plan) { p.Every = 90 * time.Minute }, "every"},
		{"zero horizon", func(p *Plan) { p.Horizon = 0 }, "horizon"},
		{"shard index out of range", func(p *Plan) { p.Shards, p.ShardIndex = 3, 3 }, "shard_index"},
		{"negative shards", func(p *Plan) { p.Shards = -1 }, "shards"},
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid plan: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			p := ok
			tt.edit(&p)
			err := p.Validate()
			if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != tt.field {
				t.Fatalf("err=%v, want EINVALID naming %s", err, tt.field)
			}
		})
	}
}

func TestJobKeyStable(t *testing.T) {
	t.Parallel()
	base := KeyInput{Model: "models:/carbon-forecaster-{zone}@champion", Versions: []string{"DE=carbon-forecaster-DE@3", "SE=carbon-forecaster-SE@1"},
		Signal: forecast.SignalDirect, Plan: testPlan([]forecast.Zone{"DE", "SE"}, 365)}
	key := JobKey(base)
	// Pinned: a changed key would make every earlier checkpoint useless.
	if want := "bf-644493ef43d5140b51a22bcc"; key != want {
		t.Fatalf("key=%q, want %q", key, want)
	}
	reordered := base
	reordered.Plan.Zones = []forecast.Zone{"SE", "DE"}
	reordered.Versions = []string{base.Versions[1], base.Versions[0]}
	if got := JobKey(reordered); got != key {
		t.Errorf("zone order changes the key: %s vs %s", got, key)
	}
	changes := []struct {
		note string
		edit func(*KeyInput)
	}{
		{"model", func(k *KeyInput) { k.Model = "models:/x@champion" }},
		{"version", func(k *KeyInput) { k.Versions = []string{"DE=carbon-forecaster-DE@4", "SE=carbon-forecaster-SE@1"} }},
		{"signal", func(k *KeyInput) { k.Signal = forecast.SignalLifecycle }},
		{"zones", func(k *KeyInput) { k.Plan.Zones = []forecast.Zone{"DE"} }},
		{"from", func(k *KeyInput) { k.Plan.From = k.Plan.From.Add(24 * time.Hour) }},
		{"to", func(k *KeyInput) { k.Plan.To = k.Plan.To.Add(24 * time.Hour) }},
		{"every", func(k *KeyInput) { k.Plan.Every = 12 * time.Hour }},
		{"horizon", func(k *KeyInput) { k.Plan.Horizon = 48 * time.Hour }},
		{"shards", func(k *KeyInput) { k.Plan.Shards = 2 }},
		{"shard index", func(k *KeyInput) { k.Plan.Shards, k.Plan.ShardIndex = 2, 1 }},
	}
	seen := map[string]string{key: "base"}
	for _, c := range changes {
		in := base
		in.Plan.Zones = append([]forecast.Zone(nil), base.Plan.Zones...)
		c.edit(&in)
		k := JobKey(in)
		if k != JobKey(in) {
			t.Errorf("%s: key not deterministic", c.note)
		}
		if prev, dup := seen[k]; dup {
			t.Errorf("changing %s gives the key of %s", c.note, prev)
		}
		seen[k] = c.note
	}
}

func TestPending(t *testing.T) {
	t.Parallel()
	all := testPlan([]forecast.Zone{"DE", "SE"}, 4).AllUnits()
	// A checkpoint read back from a store is in UTC but may be another
	// time.Time value of the same instant.
	done := []store.Unit{{Zone: "SE", IssuedAt: all[5].IssuedAt.In(time.FixedZone("x", 3600))}, all[0]}
	got := Pending(all, done)
	if len(got) != len(all)-2 {
		t.Fatalf("pending=%d, want %d", len(got), len(all)-2)
	}
	for _, u := range got {
		if keyOf(u) == keyOf(all[0]) || keyOf(u) == keyOf(all[5]) {
			t.Errorf("done unit %v still pending", u)
		}
	}
}
