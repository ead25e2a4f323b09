package hold

import (
	"encoding/json"
	"strconv"
	"time"
)

// BaselineMean is the forecast intensity the admission's promise ran
// against (running at once at admission, in AnnotationBaselineZone): its
// decided window's over one less its saving, both from its provenance
// (AnnotationProvenance, which stays the admission's when a decision
// moves).
func BaselineMean(a map[string]string) (float64, bool) {
	var p struct { // what is read of v1alpha1.Provenance (which imports this package)
		MeanIntensity float64  `json:"mean_intensity"`
		SavingsPct    *float64 `json:"savings_pct"`
	}
	if json.Unmarshal([]byte(a[AnnotationProvenance]), &p) != nil || p.SavingsPct == nil || !(*p.SavingsPct < 100) || !(p.MeanIntensity > 0) {
		return 0, false
	}
	return p.MeanIntensity / (1 - *p.SavingsPct/100), true
}

// Grams is what a run of dur at watts emits at an intensity of
// gPerKWh gCO2eq/kWh — or avoids, at a difference of intensities.
func Grams(watts float64, dur time.Duration, gPerKWh float64) float64 {
	return watts * dur.Hours() / 1000 * gPerKWh // W × h / 1000 = kWh; × g/kWh = g
}

// Repromise sets the promise of the decision annotated a, now to run dur
// at a forecast intensity of mean (its new place and hours): its saving
// against the admission's baseline (BaselineMean) in percent
// (AnnotationSavingsPct) and, for its power (Power), in grams
// (AnnotationAvoidedGrams). A decision without a promise stays without
// one. ok is false, and a unchanged, when a promise's baseline cannot be
// read.
func Repromise(a map[string]string, mean float64, dur time.Duration) (ok bool) {
	if _, promised := a[AnnotationSavingsPct]; !promised {
		return true
	}
	b, ok := BaselineMean(a)
	if !ok {
		return false
	}
	a[AnnotationSavingsPct] = strconv.FormatFloat(100*(b-mean)/b, 'f', 1, 64)
	if w, _, err := Power(a); err == nil && w > 0 {
		a[AnnotationAvoidedGrams] = strconv.FormatFloat(Grams(w, dur, b-mean), 'f', 1, 64)
	}
	return true
}
