//go:build interop

package federation

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/carbongate/carbongate/forecast/regions"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/gateway/hold"
	"github.com/carbongate/carbongate/test/cluster"
	"github.com/carbongate/carbongate/test/services"
)

// replayStart is carbongate's replay clock in these tests.
const replayStart = "2021-06-01T00:00:00Z"

// testPlacement runs carbongate (the binary) with --karmada-kubeconfig as
// the binding webhook: a Deployment with a deadline whose policy allows
// all three members lands only in the member whose grid zone carbongate
// decides (the greenest window by the bundled data at the replay clock,
// as POST /v1/schedule answers over the members' zones), stays there
// after an edit, and its binding carries the decision.
func testPlacement(t *testing.T, f *Federation) {
	const ns, name = "placed", "placed"
	g := startRegisteredGate(t, f, "carbongate-bindings")
	deadline := "2021-06-01T12:00:00Z"
	opted := map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H"}
	want := g.decidedMember(t, f.Members, "PT2H", deadline)
	createNamespace(t, f, ns)
	createAnnotatedDeployment(t, f, ns, name, 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}}, opted)

	// The same workload allowed the two others goes to the better of them.
	others, otherNames := membersBut(f.Members, want)
	second := g.decidedMember(t, others, "PT2H", deadline)
	createAnnotatedDeployment(t, f, ns, "second", 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": otherNames}}, opted)

	waitDeployment(t, want, ns, name, 1)
	waitDeployment(t, second, ns, "second", 1)
	time.Sleep(2 * time.Second)
	wantOnlyIn(t, f, want, ns, name)
	wantOnlyIn(t, f, second, ns, "second")
	b, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Get(context.Background(), name+"-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := b.GetAnnotations()
	if a[admission.AnnotationCluster] != want.Name || a[hold.AnnotationRegion] != want.Region || a[admission.AnnotationProvenance] == "" || a[hold.AnnotationSignature] == "" {
		t.Fatalf("binding annotations %v: want the decision for %s (%s)", a, want.Name, want.Region)
	}

	// A namespaced workload selected by a ClusterPropagationPolicy gets a
	// ResourceBinding too: placed the same.
	if err := newJob(f, ns, "cluster-wide", opted); err != nil {
		t.Fatal(err)
	}
	createClusterPolicy(t, f, "placed-cluster-wide", map[string]any{"apiVersion": "batch/v1", "kind": "Job", "namespace": ns, "name": "cluster-wide"})
	waitJob(t, want, ns, "cluster-wide")

	editDeployment(t, f, want, ns, name)
	time.Sleep(2 * time.Second)
	wantOnlyIn(t, f, want, ns, name)
	if in := jobIn(t, f, ns, "cluster-wide"); len(in) != 1 || in[0] != want.Name {
		t.Errorf("Job cluster-wide (ClusterPropagationPolicy) in %v, want in %s only", in, want.Name)
	}
}

// clusterPolicyResource is Karmada's ClusterPropagationPolicy.
var clusterPolicyResource = schema.GroupVersionResource{Group: "policy.karmada.io", Version: "v1alpha1", Resource: "clusterpropagationpolicies"}

// createClusterPolicy creates a ClusterPropagationPolicy over all members
// for what selects, deleted at the end of the test.
func createClusterPolicy(t *testing.T, f *Federation, name string, selects map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cpp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"resourceSelectors": []any{selects},
			"placement":         map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}},
		},
	}}
	if _, err := f.Karmada.Dynamic.Resource(clusterPolicyResource).Create(ctx, cpp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = f.Karmada.Dynamic.Resource(clusterPolicyResource).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

// bindingGate is a running carbongate serving the binding webhook.
type bindingGate struct {
	url    string
	caPEM  []byte
	client *http.Client
	proc   *services.Proc
	// sent is when the last POST /v1/schedule was sent: its answer's
	// clock was read after it.
	sent time.Time
}

// startBindingGate runs carbongate over TLS with --admission,
// --karmada-kubeconfig (Karmada's admin), the client CA of Karmada's API
// server and extra.
func startBindingGate(t *testing.T, f *Federation, extra ...string) *bindingGate {
	t.Helper()
	dir := t.TempDir()
	ca := services.NewCA(t, "carbongate-serving-ca")
	certPEM, keyPEM := ca.Issue(t, "127.0.0.1", false, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
	for name, b := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "client-ca.crt": f.Karmada.WebhookCA.PEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	g := &bindingGate{caPEM: ca.PEM, client: &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}}
	bin := services.GoBuild(t, "carbongate")
	g.proc = services.StartBinary(t, services.Binary{
		Name: "carbongate", Path: filepath.Join(bin, "carbongate"),
		ArgsFor: func() []string {
			port := services.FreePort(t)
			g.url = fmt.Sprintf("https://127.0.0.1:%d", port)
			args := []string{"--addr", fmt.Sprintf("127.0.0.1:%d", port), "--clock", "replay", "--replay-start", replayStart,
				"--drain-delay", "0s", "--access-log=false",
				"--admission", "--tls-cert", filepath.Join(dir, "tls.crt"), "--tls-key", filepath.Join(dir, "tls.key"),
				"--admission-client-ca", filepath.Join(dir, "client-ca.crt"), "--karmada-kubeconfig", f.Karmada.Kubeconfig}
			return append(args, extra...)
		},
		Ready: func(ctx context.Context) error { return services.TLSReady(g.url+"/readyz", ca.Cert)(ctx) },
	})
	return g
}

// startRegisteredGate starts a carbongate as startBindingGate does and
// registers it on Karmada's API server as the binding webhook named
// webhook.
func startRegisteredGate(t *testing.T, f *Federation, webhook string, extra ...string) *bindingGate {
	t.Helper()
	g := startBindingGate(t, f, extra...)
	f.RegisterBindingWebhook(t, webhook, g.url+admission.Path, g.caPEM)
	return g
}

// decidedMember asks g's POST /v1/schedule where a run of duration by
// deadline goes among the grid zones of members, and returns that member.
func (g *bindingGate) decidedMember(t *testing.T, members []*Cluster, duration, deadline string) *Cluster {
	t.Helper()
	m, _ := g.decide(t, members, duration, deadline)
	return m
}

// decide is decidedMember that also returns the whole answer.
func (g *bindingGate) decide(t *testing.T, members []*Cluster, duration, deadline string) (*Cluster, api.Schedule) {
	t.Helper()
	return g.ask(t, members, map[string]any{"duration": duration, "deadline": deadline})
}

// ask posts req (its zones: those of members) to g's /v1/schedule and
// returns the member decided and the answer.
func (g *bindingGate) ask(t *testing.T, members []*Cluster, req map[string]any) (*Cluster, api.Schedule) {
	t.Helper()
	var zones []string
	for _, m := range members {
		zones = append(zones, string(memberZone(t, m)))
	}
	req["zones"] = zones
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	g.sent = time.Now()
	resp, err := g.client.Post(g.url+"/v1/schedule", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d api.Schedule
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/schedule: %s, %v", resp.Status, err)
	}
	m := g.memberOf(t, members, d.Decision.Zone)
	t.Logf("carbongate decides %s (%s, zone %s) at %s among %v", m.Name, m.Region, d.Decision.Zone, d.Decision.Start.Format(time.RFC3339), zones)
	return m, d
}

// memberZone is the grid zone of m's region.
func memberZone(t *testing.T, m *Cluster) string {
	t.Helper()
	table, err := regions.Default()
	if err != nil {
		t.Fatal(err)
	}
	r, err := table.Lookup(m.Provider, m.Region)
	if err != nil {
		t.Fatalf("member %s: %v", m.Name, err)
	}
	return string(r.Zone)
}

// testDivided runs carbongate as the binding webhook for a Deployment of
// 4 replicas whose policy divides them over all three members and spreads
// them over at least two: they go to the two members whose zones
// carbongate's forecast finds greenest over the decided window, 3 in the
// greenest and 1 in the other (the least emissions the spread allows),
// none elsewhere.
func testDivided(t *testing.T, f *Federation) {
	const ns, name = "divided", "divided"
	g := startRegisteredGate(t, f, "carbongate-divided")
	deadline := "2021-06-01T12:00:00Z"
	first, d := g.decide(t, f.Members, "PT2H", deadline)
	_, at := g.decideAt(t, f.Members, "PT2H", d.Decision.Start)
	second := f.Members[0]
	for _, a := range at.Alternatives { // best first
		if m := g.memberOf(t, f.Members, a.Zone); m != first {
			second = m
			break
		}
	}
	createNamespace(t, f, ns)
	createAnnotatedDeployment(t, f, ns, name, 4, map[string]any{
		"clusterAffinity":   map[string]any{"clusterNames": memberNames(f)},
		"replicaScheduling": map[string]any{"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
		"spreadConstraints": []any{map[string]any{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 3}},
	}, map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H"})

	var split map[string]int32
	cluster.Eventually(t, 2*time.Minute, "the Deployment divided over two members", func(ctx context.Context) error {
		split = map[string]int32{}
		var sum int32
		for _, m := range f.Members {
			dep, err := m.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				return err
			}
			split[m.Name] = *dep.Spec.Replicas
			sum += *dep.Spec.Replicas
		}
		if sum != 4 {
			return fmt.Errorf("replicas %v, want 4 in all", split)
		}
		return nil
	})
	if len(split) != 2 || split[first.Name] != 3 || split[second.Name] != 1 {
		t.Fatalf("replicas by member %v: want 3 in %s (greenest) and 1 in %s (next greenest over the window), none elsewhere", split, first.Name, second.Name)
	}
	b, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Get(context.Background(), name+"-deployment", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures: 4 replicas divided %v by carbon (weights %s)", split, b.GetAnnotations()[admission.AnnotationWeights])
}

// decideAt asks g where a run of duration starting at start goes among the
// members' zones: its alternatives are every zone's window at start.
func (g *bindingGate) decideAt(t *testing.T, members []*Cluster, duration string, start time.Time) (*Cluster, api.Schedule) {
	t.Helper()
	dur, err := time.ParseDuration(strings.ToLower(strings.TrimPrefix(duration, "PT")))
	if err != nil {
		t.Fatal(err)
	}
	return g.ask(t, members, map[string]any{"duration": duration, "earliest_start": start.Format(time.RFC3339), "deadline": start.Add(dur).Format(time.RFC3339)})
}

// memberOf returns the member of members in zone.
func (g *bindingGate) memberOf(t *testing.T, members []*Cluster, zone string) *Cluster {
	t.Helper()
	for _, m := range members {
		if memberZone(t, m) == zone {
			return m
		}
	}
	t.Fatalf("no member in zone %s", zone)
	return nil
}

// testWebhookDown: with carbongate's binding webhook registered
// (failurePolicy Fail) and carbongate down, Karmada cannot create the
// binding of a new workload — it exists in no member, rather than where
// its policy alone would put it — and retries; once carbongate answers
// again the workload lands in the decided member only.
func testWebhookDown(t *testing.T, f *Federation) {
	const ns, name = "down", "down"
	g := startRegisteredGate(t, f, "carbongate-down")
	g.proc.Kill()
	createNamespace(t, f, ns)
	deadline := "2021-06-01T12:00:00Z"
	createAnnotatedDeployment(t, f, ns, name, 1, map[string]any{"clusterAffinity": map[string]any{"clusterNames": memberNames(f)}},
		map[string]string{hold.AnnotationDeadline: deadline, hold.AnnotationDuration: "PT2H"})
	time.Sleep(5 * time.Second) // Karmada has tried and been refused
	if _, err := f.Karmada.Dynamic.Resource(ResourceBindingResource).Namespace(ns).Get(context.Background(), name+"-deployment", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("binding %s-deployment with the webhook down: %v, want none", name, err)
	}
	for _, m := range f.Members {
		if _, err := m.Kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: Deployment with the webhook down: %v, want none", m.Name, err)
		}
	}

	back := startBindingGate(t, f)
	want := back.decidedMember(t, f.Members, "PT2H", deadline)
	f.PointBindingWebhook(t, "carbongate-down", back.url+admission.Path, back.caPEM)
	start := time.Now()
	waitDeployment(t, want, ns, name, 1)
	t.Logf("figures: the Deployment reached %s %v after carbongate answered again (Karmada's retry)", want.Name, time.Since(start).Round(time.Millisecond))
	time.Sleep(2 * time.Second)
	wantOnlyIn(t, f, want, ns, name)
}

// membersBut returns the members but one, and their names (as a
// placement's clusterNames).
func membersBut(members []*Cluster, but *Cluster) ([]*Cluster, []any) {
	var ms []*Cluster
	var names []any
	for _, m := range members {
		if m != but {
			ms, names = append(ms, m), append(names, m.Name)
		}
	}
	return ms, names
}
