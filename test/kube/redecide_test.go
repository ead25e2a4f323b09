//go:build interop

package kube

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/services"
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

// testRedecidePlace: a Job held in the zone of its three candidates whose
// forecast is worst (its decision signed with the candidates, its pod
// template pinned to that region under a requirement of its own, in a
// namespace the webhook does not see) is moved by the controller at the
// next forecast hour to another candidate zone: the real API server takes
// the new node affinity of the suspended Job in the same patch as the
// re-signed decision, the user's requirement kept; it is then released.
func (e *ctlEnv) testRedecidePlace(t *testing.T, g *gate) {
	ctx := context.Background()
	ns := "redecide-place"
	e.c.namespace(t, ns, nil)
	cands := []hold.Candidate{{Zone: "NL", Region: "westeurope"}, {Zone: "SE", Region: "swedencentral"}, {Zone: "PL", Region: "polandcentral"}}
	now := g.now(t).Truncate(time.Hour)
	// Each zone's best one-hour window of ten hours from 6 hours ahead (the
	// replay clock runs an hour a second): the job is held at the worst
	// zone's, which another zone's beats by far more than the gain.
	from, to := now.Add(6*time.Hour), now.Add(16*time.Hour)
	var held, best placeMean
	for _, c := range cands {
		m := g.bestWindow(t, c.Zone, from, to)
		if held.zone == "" || m.mean > held.mean {
			held = m
		}
		if best.zone == "" || m.mean < best.mean {
			best = m
		}
	}
	if !(best.mean < 0.8*held.mean) {
		t.Fatalf("the candidates' best windows %+v and %+v are within 20%%: too close to test a move of place", best, held)
	}
	heldCand, _ := hold.Find(cands, held.zone, "", hold.Candidate{})
	d := hold.Decision{Region: heldCand.Region, Zone: held.zone, Start: held.start, ReleaseBy: to.Add(-time.Hour)}
	a := d.Annotations()
	a[hold.AnnotationCandidates] = hold.FormatCandidates(cands)
	// Promised at admission: 5 % (10 g at 1 kW for an hour) against
	// running at once in the held zone.
	a[hold.AnnotationBaselineZone], a[hold.AnnotationPowerWatts], a[hold.AnnotationAvoidedGrams], a[hold.AnnotationSavingsPct] = held.zone, "1000", "10.0", "5.0"
	a[hold.AnnotationSignature] = e.signer.Sign(hold.Subject{Kind: "Job", Namespace: ns, Name: "travel"}, a)
	a["carbongate.io/provenance"] = fmt.Sprintf(`{"start":%q,"end":%q,"zone":%q,"mean_intensity":%g,"savings_pct":5}`,
		held.start.Format(time.RFC3339), held.start.Add(time.Hour).Format(time.RFC3339), held.zone, held.mean)
	own := corev1.NodeSelectorRequirement{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}
	j := testJob("travel", a)
	j.Labels = map[string]string{hold.Label: hold.Held}
	j.Spec.Suspend = new(true)
	j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{own,
			{Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{heldCand.Region}}}}}}}}
	jobs := e.c.kube.BatchV1().Jobs(ns)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var moved hold.Decision
	var got *batchv1.Job
	eventually(t, 20*time.Second, "the hold moved to another zone", func() (err error) {
		if got, err = jobs.Get(ctx, "travel", metav1.GetOptions{}); err != nil {
			return err
		}
		if moved, err = hold.Parse(got.Annotations); err != nil {
			return err
		}
		if moved.Zone == held.zone {
			return fmt.Errorf("still in %s at %v", moved.Zone, moved.Start)
		}
		return e.signer.Verify(hold.Subject{Kind: "Job", Namespace: ns, Name: "travel"}, got.Annotations)
	})
	t.Logf("held in %s at %v (%.0f gCO2eq/kWh, %s's best %.0f), moved to %s at %v", held.zone, held.start.Format(time.RFC3339), held.mean, best.zone, best.mean, moved.Zone, moved.Start.Format(time.RFC3339))
	to2, ok := hold.Find(cands, moved.Zone, "", hold.Candidate{})
	if !ok || moved.Region != to2.Region || moved.Start.After(d.ReleaseBy) || !moved.ReleaseBy.Equal(d.ReleaseBy) {
		t.Errorf("moved to %+v, want a candidate's zone and region, by the release-by %v", moved, d.ReleaseBy)
	}
	terms := got.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if want := []corev1.NodeSelectorRequirement{own, {Key: hold.RegionLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{to2.Region}}}; len(terms) != 1 || !reflect.DeepEqual(terms[0].MatchExpressions, want) {
		t.Errorf("pod template's node affinity %+v, want %+v", terms, want)
	}
	// The promise moved with the hold (by the newer forecast's gain), its
	// baseline kept.
	avoided, _ := hold.AvoidedGrams(got.Annotations)
	if pct, err := strconv.ParseFloat(got.Annotations[hold.AnnotationSavingsPct], 64); err != nil || !(pct > 5) || !(avoided > 10) || got.Annotations[hold.AnnotationBaselineZone] != held.zone {
		t.Errorf("promise after the move: %s %% and %v g against %s, want more than 5 %% and 10 g against %s", got.Annotations[hold.AnnotationSavingsPct], avoided, got.Annotations[hold.AnnotationBaselineZone], held.zone)
	}
	e.checkEvents(t, ns, "travel", "Redecided")
	metrics := g.get(t, "/metrics")
	var place float64
	for _, move := range []string{"place", "place-and-time"} {
		v, _ := services.MetricValue(t, metrics, `carbongate_controller_redecisions_total{kind="job",move="`+move+`",outcome="moved"}`)
		place += v
	}
	if place < 1 {
		t.Errorf("moves of place counted %v, want at least 1", place)
	}
	ra := released(t, 60*time.Second, "moved job", func() (metav1.Object, error) { return jobs.Get(ctx, "travel", metav1.GetOptions{}) })
	checkOnTime(t, ra, hold.ReasonScheduled)
}

// placeMean is a zone's best one-hour window and its forecast mean.
type placeMean struct {
	zone  string
	start time.Time
	mean  float64
}

// bestWindow asks g for zone's best one-hour window from `from` that ends
// by to.
func (g *gate) bestWindow(t *testing.T, zone string, from, to time.Time) placeMean {
	t.Helper()
	var out struct {
		Decision struct {
			Start time.Time `json:"start"`
			Mean  float64   `json:"mean_intensity"`
		} `json:"decision"`
	}
	g.post(t, "/v1/schedule", map[string]any{"zones": []string{zone}, "duration": "PT1H",
		"earliest_start": from.Format(time.RFC3339), "deadline": to.Format(time.RFC3339)}, &out)
	return placeMean{zone, out.Decision.Start, out.Decision.Mean}
}
