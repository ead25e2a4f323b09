package gateway_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/guard"
)

// capTable: SE is always cleanest, then DE, then PL.
func capTable() table {
	flat := func(v float64) []float64 { return slices.Repeat([]float64{v}, 96) }
	return table{"SE": flat(30), "DE": flat(300), "PL": flat(700)}
}

func cappedService(t *testing.T, zc guard.Config) *gateway.Service {
	t.Helper()
	tab := capTable()
	svc, err := gateway.New(gateway.Config{
		Forecasts: tab,
		Known:     func(z forecast.Zone) bool { _, ok := tab[z]; return ok },
		Clock:     fixedClock{now},
		ZoneCap:   zc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

var burst = gateway.Request{Zones: []forecast.Zone{"PL", "DE", "SE"}, Duration: 3 * time.Hour, Origin: "PL"}

// TestZoneCapSpreadsIdenticalRequests: 100 identical requests with a 50%
// cap send about half to the best zone and the rest to the next best, each
// diverted decision saying which zone it was steered away from; the same
// run twice gives the same sequence.
func TestZoneCapSpreadsIdenticalRequests(t *testing.T) {
	t.Parallel()
	run := func() []forecast.Zone {
		svc := cappedService(t, guard.Config{Share: 0.5, MinCount: 10, Window: time.Minute})
		var seq []forecast.Zone
		for i := range 100 {
			d, err := svc.Schedule(context.Background(), burst)
			if err != nil {
				t.Fatal(err)
			}
			seq = append(seq, d.Decision.Zone)
			switch d.Decision.Zone {
			case "SE":
				if d.Capped != nil {
					t.Fatalf("request %d: best zone with capped %+v", i, d.Capped)
				}
			case "DE":
				if len(d.Capped) != 1 || d.Capped[0].Zone != "SE" || d.Capped[0].Share <= 0.5 {
					t.Fatalf("request %d: diverted to DE with capped %+v", i, d.Capped)
				}
				// The savings are those of the window actually chosen.
				if d.Baseline == nil || d.SavingsPct == nil || math.Abs(*d.SavingsPct-(700-300)/700.0*100) > 1e-9 {
					t.Fatalf("request %d: baseline %+v savings %v", i, d.Baseline, d.SavingsPct)
				}
			default:
				t.Fatalf("request %d went to %s", i, d.Decision.Zone)
			}
			if len(d.Alternatives) != 3 || d.Alternatives[0].Zone != "SE" {
				t.Fatalf("alternatives %+v: want every zone, best first", d.Alternatives)
			}
		}
		return seq
	}
	seq := run()
	count := map[forecast.Zone]int{}
	for _, z := range seq {
		count[z]++
	}
	if count["SE"] < 45 || count["SE"] > 51 || count["DE"] != 100-count["SE"] {
		t.Fatalf("decisions %v: want at most ~50 to SE, the rest to DE", count)
	}
	if !slices.Equal(seq[:10], slices.Repeat([]forecast.Zone{"SE"}, 10)) {
		t.Fatalf("the first 10 (the minimum count) must go to the best zone: %v", seq[:10])
	}
	if again := run(); !slices.Equal(seq, again) {
		t.Fatalf("not deterministic:\n%v\n%v", seq, again)
	}
}

func TestZoneCapOffByDefault(t *testing.T) {
	t.Parallel()
	svc := cappedService(t, guard.Config{})
	for range 100 {
		d, err := svc.Schedule(context.Background(), burst)
		if err != nil {
			t.Fatal(err)
		}
		if d.Decision.Zone != "SE" || d.Capped != nil {
			t.Fatalf("without a cap: decision %s capped %+v", d.Decision.Zone, d.Capped)
		}
	}
}

func TestZoneCapInvalid(t *testing.T) {
	t.Parallel()
	for _, zc := range []guard.Config{{Share: -1}, {Share: 1.5}} {
		_, err := gateway.New(gateway.Config{Forecasts: capTable(), Known: func(forecast.Zone) bool { return true },
			Clock: fixedClock{now}, ZoneCap: zc})
		if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "zone_cap_share" {
			t.Fatalf("New with zone cap share %v: %v, want EINVALID naming zone_cap_share", zc.Share, err)
		}
	}
}
