package hold

import (
	"strings"
	"testing"
	"time"
)

func TestDecisionRoundTrip(t *testing.T) {
	t.Parallel()
	start := time.Date(2021, 6, 1, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		releaseBy time.Time
		at        time.Time
		reason    string
	}{
		{"start first", start.Add(time.Hour), start, ReasonScheduled},
		{"same instant", start, start, ReasonScheduled},
		{"guard first", start.Add(-time.Hour), start.Add(-time.Hour), ReasonGuard},
	} {
		d := Decision{Region: "swedencentral", Zone: "SE", Start: start, ReleaseBy: tc.releaseBy}
		got, err := Parse(d.Annotations())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != d {
			t.Errorf("%s: round trip %+v, want %+v", tc.name, got, d)
		}
		if !got.ReleaseAt().Equal(tc.at) || got.Reason() != tc.reason {
			t.Errorf("%s: ReleaseAt %v %s, want %v %s", tc.name, got.ReleaseAt(), got.Reason(), tc.at, tc.reason)
		}
	}
}

func TestParseNamesTheAnnotation(t *testing.T) {
	t.Parallel()
	ok := Decision{Zone: "SE", Start: time.Unix(0, 0), ReleaseBy: time.Unix(3600, 0)}.Annotations()
	for _, key := range []string{AnnotationStart, AnnotationReleaseBy} {
		for _, bad := range []string{"", "tomorrow", "2021-06-01"} {
			a := map[string]string{}
			for k, v := range ok {
				a[k] = v
			}
			a[key] = bad
			if _, err := Parse(a); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s=%q: error %v, want one naming %s", key, bad, err, key)
			}
		}
		a := map[string]string{}
		for k, v := range ok {
			if k != key {
				a[k] = v
			}
		}
		if _, err := Parse(a); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("without %s: error %v, want one naming it", key, err)
		}
	}
}

// TestDecidedDuration: the run time is the provenance's window; none
// without one.
func TestDecidedDuration(t *testing.T) {
	t.Parallel()
	got, err := DecidedDuration(map[string]string{"carbongate.io/provenance": `{"start":"2021-06-01T05:00:00Z","end":"2021-06-01T08:00:00Z","zone":"DE"}`})
	if err != nil || got != 3*time.Hour {
		t.Fatalf("%v %v, want 3h", got, err)
	}
	for _, bad := range []string{"", "{}", `{"start":"2021-06-01T05:00:00Z","end":"2021-06-01T05:00:00Z"}`, "not json"} {
		if _, err := DecidedDuration(map[string]string{"carbongate.io/provenance": bad}); err == nil {
			t.Errorf("provenance %q: no error", bad)
		}
	}
}
