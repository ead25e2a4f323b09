package hold

import (
	"testing"
	"time"
)

// TestRepromise: the promise of a moved decision is its new window's
// saving against the admission's baseline, read back from its provenance
// (100 g/kWh promising 20 %: a baseline of 125), in percent and, at its
// power, in grams; without a promise nothing is added; without a baseline
// to read the promise is left as it was and said.
func TestRepromise(t *testing.T) {
	t.Parallel()
	promised := func() map[string]string {
		return map[string]string{AnnotationProvenance: `{"mean_intensity":100,"savings_pct":20}`, AnnotationSavingsPct: "20.0",
			AnnotationAvoidedGrams: "50.0", AnnotationPowerWatts: "1000"}
	}
	a := promised()
	if !Repromise(a, 75, 2*time.Hour) || a[AnnotationSavingsPct] != "40.0" || a[AnnotationAvoidedGrams] != "100.0" {
		t.Errorf("moved to 75 g/kWh for 2 h at 1 kW: %v; want 40.0 %% and 100.0 g", a)
	}
	a = promised()
	a[AnnotationEstimatedPower] = "500"
	delete(a, AnnotationPowerWatts)
	if !Repromise(a, 150, time.Hour) || a[AnnotationSavingsPct] != "-20.0" || a[AnnotationAvoidedGrams] != "-12.5" {
		t.Errorf("moved to a worse window at an estimated 500 W: %v; want -20.0 %% and -12.5 g", a)
	}
	none := map[string]string{AnnotationProvenance: `{"mean_intensity":100,"savings_pct":null}`}
	if !Repromise(none, 75, time.Hour) || len(none) != 1 {
		t.Errorf("a decision without a promise: %v; want none added", none)
	}
	a = promised()
	delete(a, AnnotationProvenance)
	if Repromise(a, 75, time.Hour) || a[AnnotationSavingsPct] != "20.0" || a[AnnotationAvoidedGrams] != "50.0" {
		t.Errorf("without a provenance: %v; want false and the promise as it was", a)
	}
}
