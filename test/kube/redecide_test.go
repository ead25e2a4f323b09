//go:build interop

package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
)

// testRedecide: a Job held to the worst hour of DE's forecast (its
// decision signed, in a namespace the webhook does not see) is moved by
// the controller at the next forecast hour to a better start, never past
// its release-by, re-signed, with a Redecided Event and the counters; it is
// then released at the new start.
func (e *ctlEnv) testRedecide(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "redecide"
	e.c.namespace(t, ns, nil)
	now := g.now(t).Truncate(time.Hour)
	// The forecast mean of each one-hour window of ten hours from 6 hours
	// ahead, or of the next ten hours when those are too flat for a move
	// (the replay clock runs an hour a second, so where "now" falls depends
	// on how long the suite took).
	type win struct {
		start time.Time
		mean  float64
	}
	var worst, best win
	end := 0
	for base := 6; base <= 36 && end == 0; base += 10 {
		worst, best = win{}, win{}
		for h := base; h < base+10; h++ {
			from := now.Add(time.Duration(h) * time.Hour)
			var out struct {
				Decision struct {
					Mean float64 `json:"mean_intensity"`
				} `json:"decision"`
			}
			g.post(t, "/v1/schedule", map[string]any{"zones": []string{"DE"}, "duration": "PT1H",
				"earliest_start": from.Format(time.RFC3339), "deadline": from.Add(time.Hour).Format(time.RFC3339)}, &out)
			w := win{from, out.Decision.Mean}
			if worst.start.IsZero() || w.mean > worst.mean {
				worst = w
			}
			if best.start.IsZero() || w.mean < best.mean {
				best = w
			}
		}
		// Well beyond the controller's least gain (2 %), whatever the
		// newer forecasts make of it.
		if best.mean < 0.92*worst.mean {
			end = base + 10
		}
	}
	if end == 0 {
		t.Fatalf("DE's forecast 6–46 h ahead has no ten hours with a spread of 8 %%: too flat to test a move")
	}
	releaseBy := now.Add(time.Duration(end) * time.Hour)
	d := hold.Decision{Zone: "DE", Start: worst.start, ReleaseBy: releaseBy}
	a := signed(e.signer, ns, "shift", d)
	a["carbongate.io/provenance"] = fmt.Sprintf(`{"start":%q,"end":%q,"zone":"DE"}`, worst.start.Format(time.RFC3339), worst.start.Add(time.Hour).Format(time.RFC3339))
	a[hold.AnnotationPowerWatts] = "1000"
	j := testJob("shift", a)
	j.Labels = map[string]string{hold.Label: hold.Held}
	j.Spec.Suspend = new(true)
	jobs := e.c.kube.BatchV1().Jobs(ns)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var moved hold.Decision
	eventually(t, 20*time.Second, "the hold moved", func() error {
		got, err := jobs.Get(ctx, "shift", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if moved, err = hold.Parse(got.Annotations); err != nil {
			return err
		}
		if moved.Start.Equal(worst.start) {
			return fmt.Errorf("still at %v", worst.start)
		}
		return e.signer.Verify(hold.Subject{Kind: "Job", Namespace: ns, Name: "shift"}, got.Annotations)
	})
	if moved.Start.After(releaseBy) || !moved.ReleaseBy.Equal(releaseBy) || moved.Zone != "DE" {
		t.Errorf("moved to %+v, want a start by %v in DE, release-by unchanged", moved, releaseBy)
	}
	e.checkEvents(t, ns, "shift", "Redecided")
	if n := g.metric(t, `carbongate_controller_redecisions_total{kind="job",move="time",outcome="moved"}`); n < 1 {
		t.Errorf("moved counter %v, want at least 1", n)
	}
	if gr := g.metric(t, `carbongate_controller_redecision_gain_grams_total{workload_namespace="redecide"}`); !(gr > 0) {
		t.Errorf("estimated gain %v g, want positive", gr)
	}
	ra := released(t, 60*time.Second, "moved job", func() (metav1.Object, error) { return jobs.Get(ctx, "shift", metav1.GetOptions{}) })
	checkOnTime(t, ra, hold.ReasonScheduled)
}
