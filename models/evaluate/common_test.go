package evaluate_test

import (
	"slices"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/evaluate"
)

// Common keeps, per zone and signal, the issue times every key of it has;
// a zone and signal with one key keeps all its issues.
func TestCommon(t *testing.T) {
	t.Parallel()
	at := func(days ...int) []evaluate.Issue {
		var out []evaluate.Issue
		for _, d := range days {
			out = append(out, evaluate.Issue{At: day0.AddDate(0, 0, d)})
		}
		return out
	}
	key := func(zone forecast.Zone, signal forecast.Signal, model string) evaluate.Key {
		return evaluate.Key{Zone: zone, Signal: signal, ModelName: model, ModelVersion: "1"}
	}
	set := &evaluate.Set{LeadDays: 1, Issues: map[evaluate.Key][]evaluate.Issue{
		key("DE", forecast.SignalDirect, "model"):                     at(0, 1, 2, 3),
		key("DE", forecast.SignalDirect, "vendor:electricitymaps"):    at(1, 3, 5),
		key("DE", forecast.SignalLifecycle, "model"):                  at(0, 1),
		key("DE", forecast.SignalLifecycle, "vendor:electricitymaps"): at(4),
		key("FR", forecast.SignalDirect, "model"):                     at(0, 2),
	}}
	got := evaluate.Common(set)
	want := map[evaluate.Key][]int{
		key("DE", forecast.SignalDirect, "model"):                  {1, 3},
		key("DE", forecast.SignalDirect, "vendor:electricitymaps"): {1, 3},
		key("FR", forecast.SignalDirect, "model"):                  {0, 2},
	}
	if len(got.Issues) != len(want) || got.LeadDays != 1 {
		t.Fatalf("keys %v, want %v", got.Keys(), want)
	}
	for k, days := range want {
		var gotDays []int
		for _, is := range got.Issues[k] {
			gotDays = append(gotDays, int(is.At.Sub(day0)/(24*time.Hour)))
		}
		if !slices.Equal(gotDays, days) {
			t.Errorf("%v: issue days %v, want %v", k, gotDays, days)
		}
	}
}
