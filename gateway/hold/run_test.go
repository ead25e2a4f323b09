package hold

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/forecast"
)

// TestWorkloadOfBaseline: the ledger's run at admission is charged in the
// zone the promise ran against (AnnotationBaselineZone); a decision
// without one (made before it existed) is charged in its own zone, and
// one that does not parse is named.
func TestWorkloadOfBaseline(t *testing.T) {
	t.Parallel()
	meta := func(a map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "batch", Name: "train", Annotations: a,
			CreationTimestamp: metav1.NewTime(time.Date(2021, 6, 1, 9, 0, 0, 0, time.UTC))}
	}
	for _, tc := range []struct {
		base, want string
	}{{"PL", "PL"}, {"", ""}} {
		a := map[string]string{AnnotationZone: "SE", AnnotationAvoidedGrams: "42.0", AnnotationPowerWatts: "300"}
		if tc.base != "" {
			a[AnnotationBaselineZone] = tc.base
		}
		w, err := WorkloadOf("Job", meta(a), time.Time{}, time.Time{}, forecast.SignalLifecycle)
		if err != nil {
			t.Fatalf("baseline %q: %v", tc.base, err)
		}
		if w.Zone != "SE" || string(w.BaselineZone) != tc.want || w.PromisedGrams != 42 || !w.HasPromise || w.PowerWatts != 300 {
			t.Errorf("baseline %q: workload %+v", tc.base, w)
		}
	}
	_, err := WorkloadOf("Job", meta(map[string]string{AnnotationZone: "SE", AnnotationBaselineZone: "not a zone!"}), time.Time{}, time.Time{}, forecast.SignalLifecycle)
	if err == nil || !strings.Contains(err.Error(), AnnotationBaselineZone) {
		t.Errorf("malformed baseline zone: %v, want an error naming %s", err, AnnotationBaselineZone)
	}
}

// TestPower: the declared power wins over the webhook's estimate, either
// is bounded, and one that does not parse is named.
func TestPower(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a         map[string]string
		want      float64
		estimated bool
		bad       string // the annotation the error names, "" for none
	}{
		{map[string]string{AnnotationPowerWatts: "300", AnnotationEstimatedPower: "14"}, 300, false, ""},
		{map[string]string{AnnotationEstimatedPower: "13.9"}, 13.9, true, ""},
		{map[string]string{}, 0, false, ""},
		{map[string]string{AnnotationPowerWatts: "0"}, 0, false, AnnotationPowerWatts},
		{map[string]string{AnnotationEstimatedPower: "NaN"}, 0, false, AnnotationEstimatedPower},
		{map[string]string{AnnotationPowerWatts: "1e12", AnnotationEstimatedPower: "14"}, 0, false, AnnotationPowerWatts},
	} {
		w, est, err := Power(tc.a)
		if tc.bad != "" {
			if err == nil || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: error %v, want one naming %s", tc.a, err, tc.bad)
			}
			continue
		}
		if err != nil || w != tc.want || est != tc.estimated {
			t.Errorf("%v: %v %v %v, want %v %v", tc.a, w, est, err, tc.want, tc.estimated)
		}
	}
}
