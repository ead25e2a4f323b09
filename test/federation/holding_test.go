//go:build interop

package federation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// The holding tests' replay clock: it starts at holdStart, shortly
// before the hour at which a run of an hour by holdDeadline starts best
// among the members' zones (SE at 22:00 in the bundled data), and runs
// holdSpeed times as fast as the wall clock: 30 s of wall time to that
// hour, every decision within one forecast hour, so that the decision the
// test reads is the one the webhook makes. A decision the test reads less
// than minLead before it leaves no room to see the hold: the test fails.
const (
	holdStart    = "2021-06-02T21:57:30Z"
	holdDeadline = "2021-06-03T00:00:00Z"
	holdSpeed    = 5
	minLead      = 8 * time.Second
)

// heldArgs are controllerArgs on the holding tests' clock from start
// (holdStart, or earlier for more time before the release), anchored now:
// every replica started with them tells the same time.
func heldArgs(t *testing.T, f *Federation, start string) []string {
	t.Helper()
	return append(controllerArgs(t, f, holdSpeed), "--replay-start", start, "--replay-anchor", time.Now().UTC().Format(time.RFC3339Nano))
}

// decideHeld asks g for the holding tests' decision (a run of an hour by
// holdDeadline among the members) and returns it with g's clock; a start
// less than minLead away fails t.
func decideHeld(t *testing.T, g *bindingGate, f *Federation) (api.Schedule, replayClock) {
	t.Helper()
	_, d := g.decide(t, f.Members, "PT1H", holdDeadline)
	clk := replayClock{wall: g.sent, replay: d.Clock.Now, speed: holdSpeed}
	if lead := clk.wallOf(d.Decision.Start).Sub(clk.wall); lead < minLead {
		t.Fatalf("the decided start %s is %v away, want at least %v: the set-up took too long, or holdStart and holdDeadline no longer fit the bundled data",
			d.Decision.Start.Format(time.RFC3339), lead, minLead)
	}
	return d, clk
}

// testHolding runs two carbongate replicas with --controller as well as
// --karmada-kubeconfig (the controller's own cluster is Karmada's API
// server here; its Lease is there), the second serving the webhook: a Job
// with a deadline whose policy allows all three members is held — its
// binding labelled held with its scheduling suspended, the Job in no
// member, across an edit of the Job — while the leader is killed; the
// other replica takes over, stages the binding holdingAhead before its
// release (Karmada schedules it into the decided member, its dispatch
// held across another edit, the Job still in no member) and releases it
// once at the decided start: the Job appears in the decided member only,
// its binding labelled released, and an edit afterwards neither moves nor
// duplicates it.
func testHolding(t *testing.T, f *Federation) {
	const ns = "held"
	createNamespace(t, f, ns)
	args := append(heldArgs(t, f, holdStart), "--karmada-schedule-ahead", holdingAhead.String())
	leader := startBindingGate(t, f, args...)
	waitLog(t, leader, "elected leader")
	g := startRegisteredGate(t, f, "carbongate-holding", args...)

	_, clk := decideHeld(t, g, f)
	createJob(t, f, ns, "held", map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	b := waitBinding(t, f, ns, "held-job", labelled(hold.Held))
	if s, _, _ := unstructured.NestedBool(b.Object, hold.BindingSuspension...); !s {
		t.Fatalf("binding held-job: spec.suspension.scheduling not true: %v", b.Object["spec"])
	}
	dec, err := hold.Parse(b.GetAnnotations())
	if err != nil {
		t.Fatal(err)
	}
	want := f.Member(b.GetAnnotations()[admission.AnnotationCluster])
	releaseAt := clk.wallOf(dec.ReleaseAt())
	if time.Until(releaseAt) < holdingAhead+2*time.Second {
		t.Fatalf("the binding's decision releases it %v from now: too soon for the hold to show before it is staged %v ahead", time.Until(releaseAt), holdingAhead)
	}
	t.Logf("held until %s (in %v), then in %s", dec.ReleaseAt().Format(time.RFC3339), time.Until(releaseAt).Round(time.Millisecond), want.Name)

	editJob(t, f, ns, "held", "before-release")
	leader.proc.Kill()
	staged := waitBinding(t, f, ns, "held-job", func(b *unstructured.Unstructured) error { return isStaged(b, want.Name) })
	if time.Until(releaseAt) < time.Second {
		t.Fatalf("staged %v before its release, want about %v", time.Until(releaseAt), holdingAhead)
	}
	t.Logf("staged %v before its release: scheduled to %s, its dispatch held", time.Until(releaseAt).Round(time.Millisecond), want.Name)
	// Karmada's detector resets the dispatching from the policy on an edit;
	// the webhook keeps it held.
	editJob(t, f, ns, "held", "while-staged")
	waitBinding(t, f, ns, "held-job", func(b *unstructured.Unstructured) error {
		if b.GetGeneration() == staged.GetGeneration() {
			return errors.New("not rewritten by Karmada after the edit yet")
		}
		return isStaged(b, want.Name)
	})
	for time.Until(releaseAt) > 300*time.Millisecond {
		if in := jobIn(t, f, ns, "held"); len(in) > 0 {
			t.Fatalf("Job held/held in %v %v before its release", in, time.Until(releaseAt).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitJob(t, want, ns, "held")
	t.Logf("figures: the held Job appeared in %s %v after its decided release (the leader killed while holding)", want.Name, time.Since(releaseAt).Round(time.Millisecond))
	waitBinding(t, f, ns, "held-job", labelled(hold.Released))
	if n := g.metric(t, `carbongate_controller_releases_total{kind="resourcebinding",reason="scheduled"}`); n != 1 {
		t.Errorf("the replica that took over released %v bindings, want 1", n)
	}
	editJob(t, f, ns, "held", "after-release")
	time.Sleep(2 * time.Second)
	if in := jobIn(t, f, ns, "held"); len(in) != 1 || in[0] != want.Name {
		t.Fatalf("Job held/held in %v after an edit, want in %s only", in, want.Name)
	}
}

// holdingAhead is how long before its release testHolding's binding is
// staged (--karmada-schedule-ahead).
const holdingAhead = 8 * time.Second

// isStaged says why binding b is not staged into member: scheduled there
// by Karmada, its dispatching held, still labelled held.
func isStaged(b *unstructured.Unstructured, member string) error {
	sched, _, _ := unstructured.NestedBool(b.Object, hold.BindingSuspension...)
	disp, _, _ := unstructured.NestedBool(b.Object, hold.BindingDispatching...)
	if err := isScheduledTo(b, member); sched || !disp || b.GetLabels()[hold.Label] != hold.Held || err != nil {
		return fmt.Errorf("not staged into %s: suspension %v, %v, label %q", member, b.Object["spec"].(map[string]any)["suspension"], err, b.GetLabels()[hold.Label])
	}
	return nil
}

// isScheduledTo says why binding b is not scheduled by Karmada to member
// alone (spec.clusters).
func isScheduledTo(b *unstructured.Unstructured, member string) error {
	clusters, _, _ := unstructured.NestedSlice(b.Object, "spec", "clusters")
	var names []any
	for _, c := range clusters {
		if m, ok := c.(map[string]any); ok {
			names = append(names, m["name"])
		}
	}
	if len(names) != 1 || names[0] != member {
		return fmt.Errorf("scheduled to %v", names)
	}
	return nil
}

// waitLog waits until g's log has substring s.
func waitLog(t *testing.T, g *bindingGate, s string) {
	t.Helper()
	cluster.Eventually(t, 30*time.Second, "carbongate logs "+s, func(context.Context) error {
		if !strings.Contains(g.proc.Log(), s) {
			return errors.New("not yet")
		}
		return nil
	})
}

// metric reads the value of series (name and labels as exposed) from g's
// /metrics; absent is 0.
func (g *bindingGate) metric(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := g.client.Get(g.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := services.MetricValue(t, body, series)
	return v
}

// replayClock maps the replay clock of a carbongate running speed times
// as fast as the wall clock to the wall clock: replay read at wall or just
// after (the request's send time), so that a wall time it gives is never
// later than the true one and a lag measured from it never shorter.
type replayClock struct {
	wall, replay time.Time
	speed        float64
}

func (c replayClock) wallOf(t time.Time) time.Time {
	return c.wall.Add(time.Duration(float64(t.Sub(c.replay)) / c.speed))
}

// keyFile writes a random decision key and returns its path.
func keyFile(t *testing.T) string {
	t.Helper()
	key := make([]byte, hold.MinKeyBytes)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "decision.key")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// createJob creates a Job of a pause container on Karmada with annotations
// and a PropagationPolicy of its own over all members.
func createJob(t *testing.T, f *Federation, ns, name string, annotations map[string]string) {
	t.Helper()
	if err := newJob(f, ns, name, annotations); err != nil {
		t.Fatal(err)
	}
	createPolicy(t, f, ns, name, map[string]any{"apiVersion": "batch/v1", "kind": "Job", "name": name})
}

// editJob annotates Job ns/name on Karmada, which makes Karmada rewrite
// its binding from the policy.
func editJob(t *testing.T, f *Federation, ns, name, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"example.com/edited":%q}}}`, value)
	if _, err := f.Karmada.Kube.BatchV1().Jobs(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitJob waits until member m has Job ns/name.
func waitJob(t *testing.T, m *Cluster, ns, name string) {
	t.Helper()
	cluster.Eventually(t, time.Minute, fmt.Sprintf("Job %s/%s in %s", ns, name, m.Name), func(ctx context.Context) error {
		_, err := m.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		return err
	})
}

// jobIn returns the members that have Job ns/name.
func jobIn(t *testing.T, f *Federation, ns, name string) []string {
	t.Helper()
	var in []string
	for _, m := range f.Members {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := m.Kube.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		cancel()
		switch {
		case err == nil:
			in = append(in, m.Name)
		case !apierrors.IsNotFound(err):
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	return in
}

// labelled accepts a binding labelled value (hold.Label); a released one
// must carry its release stamp.
func labelled(value string) func(*unstructured.Unstructured) error {
	return func(b *unstructured.Unstructured) error {
		if b.GetLabels()[hold.Label] != value || (value == hold.Released && b.GetAnnotations()[hold.AnnotationReleasedAt] == "") {
			return fmt.Errorf("labels %v, annotations %v: want %s", b.GetLabels(), b.GetAnnotations(), value)
		}
		return nil
	}
}

// waitBinding waits until binding ns/name exists and ok accepts it, and
// returns it.
func waitBinding(t *testing.T, f *Federation, ns, name string, ok func(*unstructured.Unstructured) error) *unstructured.Unstructured {
	t.Helper()
	var b *unstructured.Unstructured
	cluster.Eventually(t, time.Minute, "binding "+ns+"/"+name, func(ctx context.Context) error {
		var err error
		if b, err = f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		return ok(b)
	})
	return b
}
