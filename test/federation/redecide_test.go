//go:build interop

package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/hold"
)

// redecideStart is testRedecideMember's replay start: 36 s of wall time
// (at holdSpeed) before the forecast hour at which the controller
// re-decides, for the set-up and the move before it.
const redecideStart = "2021-06-02T21:57:00Z"

// testRedecideMember: a held binding whose decision was moved (signed
// with carbongate's key, as a re-decision in an earlier forecast hour
// would have) to the member of the worst zone, an hour later, is re-asked
// by the controller at the next forecast hour over the candidates the
// webhook signed and moved to a better member in one patch — the
// webhook keeps the moved decision and narrows the placement to it —
// then released there: the Job appears in that member only, never in the
// worst one, and the promise moved with it against the same baseline.
func testRedecideMember(t *testing.T, f *Federation) {
	const ns = "redecide"
	createNamespace(t, f, ns)
	key := keyFile(t)
	raw, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := hold.NewSigner(bytes.TrimSpace(raw))
	if err != nil {
		t.Fatal(err)
	}
	// Later flags win: the key the test signs with, re-deciding on, not staged.
	g := startRegisteredGate(t, f, "carbongate-redecide", append(heldArgs(t, f, redecideStart), "--decision-key-file", key, "--redecide=true", "--karmada-schedule-ahead", "0s")...)
	_, clk := decideHeld(t, g, f)

	createJob(t, f, ns, "travel", map[string]string{hold.AnnotationDeadline: holdDeadline, hold.AnnotationDuration: "PT1H"})
	b := waitBinding(t, f, ns, "travel-job", labelled(hold.Held))
	a := b.GetAnnotations()
	cands, ok, err := hold.ParseCandidates(a)
	if !ok || err != nil {
		t.Fatalf("binding travel-job: candidates %q (%v), want the members the webhook decided among", a[hold.AnnotationCandidates], err)
	}
	decided, err := hold.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	worst := f.Member("member-pl")
	if a[admission.AnnotationCluster] == worst.Name {
		t.Fatalf("the webhook placed travel-job in %s, the worst zone's member: nothing to move from", worst.Name)
	}
	i := slices.IndexFunc(cands, func(c hold.Candidate) bool { return c.Cluster == worst.Name })
	if i < 0 || cands[i].Zone != string(memberZone(t, worst)) {
		t.Fatalf("candidates %v lack %s in its zone", cands, worst.Name)
	}
	from := cands[i]
	moved := decided
	moved.Zone, moved.Region, moved.Start = from.Zone, from.Region, decided.ReleaseBy
	turn := nextHour(clk.replay) // when the controller re-decides
	if !moved.Start.After(turn) {
		t.Fatalf("release-by %s leaves no start later than the next forecast hour %s", decided.ReleaseBy.Format(time.RFC3339), turn.Format(time.RFC3339))
	}
	a = moveBinding(t, f, signer, ns, "travel-job", moved, worst.Name)
	if left := time.Until(clk.wallOf(turn)); left <= 0 {
		t.Fatalf("the move landed %v after the forecast hour: the set-up took too long", -left)
	}
	pct, _ := strconv.ParseFloat(a[hold.AnnotationSavingsPct], 64)
	t.Logf("held in %s at %s by the webhook; moved by the test to %s at %s", decided.Zone, decided.Start.Format(time.RFC3339), worst.Name, moved.Start.Format(time.RFC3339))

	released := waitBinding(t, f, ns, "travel-job", labelled(hold.Released))
	to := f.Member(released.GetAnnotations()[admission.AnnotationCluster])
	if to == nil || to == worst {
		t.Fatalf("released into %v, want another member than %s", released.GetAnnotations()[admission.AnnotationCluster], worst.Name)
	}
	waitJob(t, to, ns, "travel")
	t.Logf("figures: re-decided and released into %s %v after the forecast hour", to.Name, time.Since(clk.wallOf(turn)).Round(time.Millisecond))
	if in := jobIn(t, f, ns, "travel"); len(in) != 1 || in[0] != to.Name {
		t.Fatalf("Job travel in %v, want in %s only", in, to.Name)
	}
	ra := released.GetAnnotations()
	if got, _ := strconv.ParseFloat(ra[hold.AnnotationSavingsPct], 64); !(got > pct) || ra[hold.AnnotationBaselineZone] != a[hold.AnnotationBaselineZone] {
		t.Errorf("promise after the move: %s %% against %s, want more than %v %% against %s", ra[hold.AnnotationSavingsPct], ra[hold.AnnotationBaselineZone], pct, a[hold.AnnotationBaselineZone])
	}
	var n float64
	for _, move := range []string{"place", "place-and-time"} {
		n += g.metric(t, `carbongate_controller_redecisions_total{kind="resourcebinding",move="`+move+`",outcome="moved"}`)
	}
	if n != 1 {
		t.Errorf("moves of place counted %v, want 1", n)
	}
}

// nextHour is the forecast hour after t: when the controller re-decides a
// workload first seen in t's hour.
func nextHour(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }

// moveBinding moves binding ns/name's decision to d in member, signed
// with signer as carbongate's controller signs a move, and returns its
// annotations once the webhook kept the move and narrowed the placement
// to member.
func moveBinding(t *testing.T, f *Federation, signer *hold.Signer, ns, name string, d hold.Decision, member string) map[string]string {
	t.Helper()
	b := waitBinding(t, f, ns, name, labelled(hold.Held))
	a := b.GetAnnotations()
	for k, v := range d.Annotations() {
		a[k] = v
	}
	a[admission.AnnotationCluster] = member
	a[hold.AnnotationSignature] = signer.Sign(hold.Subject{Kind: admission.BindingKind, Namespace: ns, Name: name}, a)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": a, "resourceVersion": b.GetResourceVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	return waitBinding(t, f, ns, name, func(b *unstructured.Unstructured) error {
		names, _, _ := unstructured.NestedStringSlice(b.Object, "spec", "placement", "clusterAffinity", "clusterNames")
		if got := b.GetAnnotations()[admission.AnnotationCluster]; got != member || len(names) != 1 || names[0] != member {
			return fmt.Errorf("decided member %q, clusterNames %v: want %s", got, names, member)
		}
		return nil
	}).GetAnnotations()
}
