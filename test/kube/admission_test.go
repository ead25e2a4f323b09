//go:build interop

package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/carbongate/carbongate/deploy/webhook"
	"github.com/carbongate/carbongate/gateway/admission"
	"github.com/carbongate/carbongate/test/services"
)

// Labels the admission tests use: a namespace's mode picks the webhook
// (carbongate's or OPA's, fail-closed or fail-open); objects carrying seedLabel are
// not sent to the webhook (the old objects of UPDATE cases are stored
// as the fixture has them).
const (
	labelMode = "test.carbongate.io/webhook"
	seedLabel = "test.carbongate.io/seed"
)

// fixture is one case of test/fixtures/admission (format in its README).
type fixture struct {
	name string
	req  admissionv1.AdmissionRequest
	want struct {
		Note            string            `json:"note"`
		Allowed         bool              `json:"allowed"`
		Code            int32             `json:"code"`
		MessageContains string            `json:"message_contains"`
		Patch           json.RawMessage   `json:"patch"`
		EligibleZones   []string          `json:"eligible_zones"`
		Representatives map[string]string `json:"representatives"`
		Carbongate      string            `json:"carbongate"`
		FailOpen        bool              `json:"fail_open"`
	}
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	root := filepath.Join(services.RepoRoot(t), "test", "fixtures", "admission")
	dirs, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var fs []fixture
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		f := fixture{name: d.Name()}
		var rv admissionv1.AdmissionReview
		readJSON(t, filepath.Join(root, d.Name(), "review.json"), &rv)
		readJSON(t, filepath.Join(root, d.Name(), "want.json"), &f.want)
		if rv.Request == nil {
			t.Fatalf("%s: review.json has no request", d.Name())
		}
		f.req = *rv.Request
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		t.Fatalf("no fixtures in %s", root)
	}
	return fs
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// registerWebhook registers carbongate at g as the webhook of the
// namespaces labelled mode, from deploy/webhook's configuration with the
// test's CA and g's URL, and waits until the API server calls it.
func registerWebhook(t testing.TB, c *cluster, name, mode string, ca []byte, url string, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	mwc, err := webhook.Configuration(webhook.Config{CABundle: ca, URL: url, FailurePolicy: string(policy)})
	if err != nil {
		t.Fatal(err)
	}
	mwc.Name = name
	mwc.Webhooks = mwc.Webhooks[:1] // the VmTemplate webhook only
	w := &mwc.Webhooks[0]
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{labelMode: mode}}
	w.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: seedLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	ctx := context.Background()
	if _, err := c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("register webhook %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	// The API server picks the configuration up from a watch: a dry-run
	// create shows when the webhook is called.
	ns := "probe-" + mode
	c.namespace(t, ns, map[string]string{labelMode: mode})
	probe := vmTemplate(ns, "probe", map[string]any{"duration": "PT1H", "maxLatencyMs": int64(0), "originRegion": "westeurope"})
	eventually(t, 30*time.Second, "webhook "+name+" called", func() error {
		out, err := c.vmtemplates(ns).Create(ctx, probe.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return err
		}
		if len(out.GetAnnotations()) == 0 {
			return errors.New("not mutated yet")
		}
		return nil
	})
}

// vmTemplate is a VmTemplate object.
func vmTemplate(ns, name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "carbongate.io/v1alpha1", "kind": "VmTemplate",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
}

// webhookUnderTest is one implementation of the VmTemplate webhook as the
// API server calls it: a fail-closed and a fail-open server, both serving
// TLS with a certificate of ca and requiring the API server's client
// certificate.
type webhookUnderTest struct {
	name         string // prefixes its registrations, namespace labels and namespaces
	closed, open webhookServer
	ca           []byte // caBundle
	// excluded says why the fixtures whose carbongate is down, slow or
	// failing are not replayed here.
	excluded string
}

// webhookServer is a running webhook: the URL the API server calls, its
// process, and the carbongate whose /v1/schedule answer it admits with.
type webhookServer struct {
	url  string
	proc *services.Proc
	gate *gate
}

// testAdmission is (b): carbongate processes (--admission, fail-closed and
// fail-open) as the webhooks, their webhook route requiring the API
// server's client certificate (see testWebhook).
func testAdmission(t *testing.T, c *cluster, bin string) {
	tf := newTLSFiles(t, c)
	closed := startGate(t, bin, &tf, "--admission")
	open := startGate(t, bin, &tf, "--admission", "--admission-fail-open")
	// Positive control of the client certificate: without one, the route
	// refuses the review, so every admission below came with the API
	// server's.
	resp, err := closed.client.Post(closed.URL+admission.Path, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a review without a client certificate: %d, want 401", resp.StatusCode)
	}
	testWebhook(t, c, webhookUnderTest{
		name:   "carbongate",
		closed: webhookServer{url: closed.URL + admission.Path, proc: closed.Proc, gate: closed},
		open:   webhookServer{url: open.URL + admission.Path, proc: open.Proc, gate: open},
		ca:     tf.serverCA.PEM,
		excluded: "it needs a scheduler that fails inside the webhook's process (gateway/admission and test/opa replay it); " +
			"the API server's side of an outage is TestKubernetes/side-by-side/Admission/down",
	})
}

// testOPAAdmission is (c), the seed design: OPA serving the bundle
// (deploy/opa, built with opa build) as the webhooks, fail-closed and
// fail-open, over TLS and requiring the API server's client certificate
// (--authentication=tls), at POST / with the policy's answer as default
// decision (as the Helm chart runs it); the policy asks a real carbongate
// through http.send, without caching, so every review reaches carbongate.
func testOPAAdmission(t *testing.T, c *cluster, bin string) {
	opa := services.OPABinary(t)
	bundle := services.BuildOPABundle(t, opa)
	g := startGate(t, bin, nil)
	tf := newTLSFiles(t, c)
	startOPA := func(failOpen bool) *services.OPA {
		return services.StartOPA(t, opa, services.OPAConfig{Bundle: bundle, Carbongate: g.URL, FailOpen: failOpen,
			CertFile: tf.cert, KeyFile: tf.key, ClientCAFile: tf.clientCAFile})
	}
	closed, open := startOPA(false), startOPA(true)
	// Positive control of the client certificate: without one, OPA ends
	// the TLS handshake, so every admission below came with the API
	// server's.
	resp, err := tf.client().Post(closed.URL+"/", "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a review without a client certificate: %d, want refused in the TLS handshake", resp.StatusCode)
	}
	t.Logf("a review without a client certificate: %v", err)
	testWebhook(t, c, webhookUnderTest{
		name:   "opa",
		closed: webhookServer{url: closed.URL + "/", proc: closed.Proc, gate: g},
		open:   webhookServer{url: open.URL + "/", proc: open.Proc, gate: g},
		ca:     tf.serverCA.PEM,
		excluded: "OPA here calls a carbongate that is up; test/opa replays it with carbongate down, slow or failing behind OPA; " +
			"the API server's side of an OPA outage is TestKubernetes/side-by-side/AdmissionOPA/down",
	})
}

// testWebhook registers w's servers as webhooks (each for the namespaces
// labelled with its name), replays the admission fixtures as API
// operations, each in a namespace of its own, then takes the servers down
// under failurePolicy Fail and Ignore. Both implementations run this, so
// they meet the same fixtures with the same expectations.
func testWebhook(t *testing.T, c *cluster, w webhookUnderTest) {
	registerWebhook(t, c, w.name+"-closed", w.name+"-closed", w.ca, w.closed.url, admissionregistrationv1.Fail)
	registerWebhook(t, c, w.name+"-open", w.name+"-open", w.ca, w.open.url, admissionregistrationv1.Fail)

	start := time.Now()
	t.Run("fixtures", func(t *testing.T) {
		for _, f := range loadFixtures(t) {
			t.Run(f.name, func(t *testing.T) {
				t.Parallel()
				s, mode := w.closed, w.name+"-closed"
				if f.want.FailOpen {
					s, mode = w.open, w.name+"-open"
				}
				switch f.want.Carbongate {
				case "", "up", "error422":
				default:
					t.Logf("excluded: carbongate mode %q: %s", f.want.Carbongate, w.excluded)
					return
				}
				ns := w.name + "-" + f.name
				c.namespace(t, ns, map[string]string{labelMode: mode})
				f.replay(t, c, s.gate, ns)
			})
		}
	})
	t.Logf("fixtures replayed through the API server and %s in %v", w.name, time.Since(start).Round(time.Millisecond))

	t.Run("down", func(t *testing.T) { testWebhookDown(t, c, w) })
}

// replay performs the fixture's operation through the API server in
// namespace ns and checks the outcome against want.json.
func (f fixture) replay(t *testing.T, c *cluster, g *gate, ns string) {
	ctx := context.Background()
	vmt := c.vmtemplates(ns)
	if f.req.Operation == admissionv1.Delete {
		seed := object(t, f.req.OldObject.Raw, ns)
		seed.SetLabels(map[string]string{seedLabel: "true"})
		if _, err := vmt.Create(ctx, seed, metav1.CreateOptions{}); err != nil {
			t.Fatalf("store the object: %v", err)
		}
		// The rules cover CREATE and UPDATE only: deletes are not sent.
		if err := vmt.Delete(ctx, seed.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v, want it allowed", err)
		}
		return
	}
	obj := object(t, f.req.Object.Raw, ns)
	if obj.GetKind() != "VmTemplate" {
		// The shipped rules send only vmtemplates: the API server stores
		// the object without calling the webhook.
		out, err := c.resource(t, obj).Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s: %v", obj.GetKind(), err)
		}
		if len(out.GetAnnotations()) != 0 {
			t.Errorf("%s stored with annotations %v, want none", obj.GetKind(), out.GetAnnotations())
		}
		return
	}
	// The controller tests that follow reconcile every VmTemplate of the
	// cluster: a fixture's object left behind fails there (no provider
	// template in its namespace) and is retried, and enough of them
	// throttle the controller's client past those tests' bounds.
	t.Cleanup(func() {
		if err := vmt.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("delete the fixture's object: %v", err)
		}
	})
	switch f.req.Operation {
	case admissionv1.Create:
		dry, err := vmt.Create(ctx, obj.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		f.check(t, g, dry, err)
		if _, err := vmt.Get(ctx, obj.GetName(), metav1.GetOptions{}); !isNotFound(err) {
			t.Errorf("after a dry-run create: get = %v, want NotFound", err)
		}
		out, err := vmt.Create(ctx, obj, metav1.CreateOptions{})
		f.check(t, g, out, err)
		f.checkStored(t, vmt, obj.GetName(), out)
	case admissionv1.Update:
		seed := object(t, f.req.OldObject.Raw, ns)
		seed.SetLabels(map[string]string{seedLabel: "true"})
		stored, err := vmt.Create(ctx, seed, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("store the old object: %v", err)
		}
		obj.SetResourceVersion(stored.GetResourceVersion())
		out, err := vmt.Update(ctx, obj, metav1.UpdateOptions{})
		f.check(t, g, out, err)
		f.checkStored(t, vmt, obj.GetName(), out)
	default:
		t.Fatalf("operation %s", f.req.Operation)
	}
}

// object decodes a fixture object into namespace ns, without the uid the
// fixture made up.
func object(t *testing.T, raw []byte, ns string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	o := &unstructured.Unstructured{Object: m}
	o.SetNamespace(ns)
	o.SetUID("")
	return o
}

// checkStored checks that what is stored is what the write returned.
func (f fixture) checkStored(t *testing.T, vmt interface {
	Get(context.Context, string, metav1.GetOptions, ...string) (*unstructured.Unstructured, error)
}, name string, written *unstructured.Unstructured) {
	t.Helper()
	got, err := vmt.Get(context.Background(), name, metav1.GetOptions{})
	if !f.want.Allowed {
		if f.req.Operation == admissionv1.Create && !isNotFound(err) {
			t.Errorf("denied, yet get = %v, want NotFound", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Object["spec"], written.Object["spec"]) || !reflect.DeepEqual(got.GetAnnotations(), written.GetAnnotations()) {
		t.Errorf("stored spec %v annotations %v, want what the write returned: %v %v", got.Object["spec"], got.GetAnnotations(), written.Object["spec"], written.GetAnnotations())
	}
}

// check compares the API server's answer to a write with want.json: a
// denial with the webhook's code and message, or the object as the
// fixture's patch (placeholders resolved) makes it.
func (f fixture) check(t *testing.T, g *gate, out *unstructured.Unstructured, err error) {
	t.Helper()
	if !f.want.Allowed {
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("write: %v, want a denial %d", err, f.want.Code)
		}
		st := se.ErrStatus
		if st.Code != f.want.Code || !strings.Contains(st.Message, "denied the request") || !strings.Contains(st.Message, f.want.MessageContains) {
			t.Errorf("denial %d %q, want %d from the webhook containing %q", st.Code, st.Message, f.want.Code, f.want.MessageContains)
		}
		return
	}
	if err != nil {
		t.Fatalf("write: %v, want it admitted", err)
	}
	want := object(t, f.req.Object.Raw, out.GetNamespace())
	if len(f.want.Patch) > 0 && string(f.want.Patch) != "null" {
		patch := f.resolve(t, g, out)
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			t.Fatalf("patch %s: %v", patch, err)
		}
		doc, err := json.Marshal(want.Object)
		if err != nil {
			t.Fatal(err)
		}
		patched, err := p.Apply(doc)
		if err != nil {
			t.Fatalf("want.json's patch does not apply to the object: %v", err)
		}
		want = &unstructured.Unstructured{}
		if err := want.UnmarshalJSON(patched); err != nil {
			t.Fatal(err)
		}
	}
	if g, w := normalize(t, out.Object["spec"]), normalize(t, want.Object["spec"]); !reflect.DeepEqual(g, w) {
		t.Errorf("spec\n got %s\nwant %s", mustJSON(t, g), mustJSON(t, w))
	}
	if g, w := out.GetAnnotations(), want.GetAnnotations(); !reflect.DeepEqual(g, w) && (len(g) != 0 || len(w) != 0) {
		t.Errorf("annotations\n got %v\nwant %v", g, w)
	}
}

// decision is the part of carbongate's scheduling answer (and of the
// provenance annotation) the patch placeholders stand for.
type decision struct {
	Zone          string            `json:"zone"`
	Region        string            `json:"region"`
	Start         time.Time         `json:"start"`
	End           time.Time         `json:"end"`
	MeanIntensity float64           `json:"mean_intensity"`
	SavingsPct    *float64          `json:"savings_pct"`
	Sources       map[string]string `json:"sources"`
	RequestID     string            `json:"request_id"`
}

// resolve returns want.json's patch with the placeholders filled in. The
// webhook's decision is read from the provenance annotation the API server
// stored, and checked against carbongate's answer to the same
// /v1/schedule call made now: the same zone, region and sources, and the
// same window (or, when the best window starts "now", one that started at
// most the time between the two calls earlier).
func (f fixture) resolve(t *testing.T, g *gate, out *unstructured.Unstructured) []byte {
	t.Helper()
	var ops []map[string]any
	if err := json.Unmarshal(f.want.Patch, &ops); err != nil {
		t.Fatal(err)
	}
	prov := out.GetAnnotations()[admission.AnnotationProvenance]
	var d *decision
	for _, op := range ops {
		v, _ := op["value"].(string)
		switch v {
		case "$decision.region", "$decision.start", "$provenance":
			if d == nil {
				d = f.checkDecision(t, g, prov)
			}
		}
		switch v {
		case "$decision.region":
			op["value"] = d.Region
		case "$decision.start":
			op["value"] = d.Start.UTC().Format(time.RFC3339)
		case "$provenance":
			op["value"] = prov
		case "$why":
			why := out.GetAnnotations()[admission.AnnotationUnscheduled]
			if why == "" {
				t.Errorf("no %s reason", admission.AnnotationUnscheduled)
			}
			op["value"] = why
		}
	}
	return []byte(mustJSON(t, ops))
}

func (f fixture) checkDecision(t *testing.T, g *gate, prov string) *decision {
	t.Helper()
	var d decision
	if err := json.Unmarshal([]byte(prov), &d); err != nil {
		t.Fatalf("provenance annotation %q: %v", prov, err)
	}
	if d.RequestID == "" {
		t.Errorf("provenance %s has no request_id", prov)
	}
	region, ok := f.want.Representatives[d.Zone]
	if !ok || d.Region != region {
		t.Fatalf("the webhook chose %s in %s; want.json's representative of %s is %q", d.Region, d.Zone, d.Zone, region)
	}
	var obj struct {
		Spec struct{ Duration, Deadline string } `json:"spec"`
	}
	if err := json.Unmarshal(f.req.Object.Raw, &obj); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"zones": f.want.EligibleZones, "duration": obj.Spec.Duration}
	if obj.Spec.Deadline != "" {
		body["deadline"] = obj.Spec.Deadline
	}
	written := time.Now()
	var answer struct {
		Decision struct {
			Zone          string    `json:"zone"`
			Start         time.Time `json:"start"`
			End           time.Time `json:"end"`
			MeanIntensity float64   `json:"mean_intensity"`
		} `json:"decision"`
		SavingsPct *float64                           `json:"savings_pct"`
		Provenance map[string]struct{ Source string } `json:"provenance"`
	}
	g.post(t, "/v1/schedule", body, &answer)
	a := answer.Decision
	sources := map[string]string{}
	for z, p := range answer.Provenance {
		sources[z] = p.Source
	}
	if a.Zone != d.Zone || !reflect.DeepEqual(sources, d.Sources) {
		t.Errorf("the webhook chose %s with sources %v; carbongate answers %s with %v", d.Zone, d.Sources, a.Zone, sources)
	}
	if a.Start.Equal(d.Start) {
		// The saving is against running now, a window that starts at the
		// second of each call: a second later (a loaded machine) moves it a
		// little. The decision itself must be the same.
		if !a.End.Equal(d.End) || a.MeanIntensity != d.MeanIntensity || !closeSavings(answer.SavingsPct, d.SavingsPct) {
			t.Errorf("the webhook's window %+v; carbongate answers %+v (savings %v)", d, a, answer.SavingsPct)
		}
	} else if lag := a.Start.Sub(d.Start); lag < 0 || lag > time.Since(written)+time.Minute || a.End.Sub(a.Start) != d.End.Sub(d.Start) {
		t.Errorf("the webhook's window starts %s, carbongate's now %s: not a window starting \"now\" at two moments", d.Start, a.Start)
	}
	return &d
}

// closeSavings reports whether two savings (nil: no baseline) agree to a
// tenth of a percentage point.
func closeSavings(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) <= 0.1
}

// post sends body as JSON to carbongate and decodes a 200 answer into out.
func (g *gate) post(t *testing.T, path string, body, out any) {
	t.Helper()
	resp, err := g.client.Post(g.URL+path, "application/json", strings.NewReader(mustJSON(t, body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("POST %s: %v\n%s", path, err, b)
	}
}

func normalize(t *testing.T, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(mustJSON(t, v)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// testWebhookDown registers w's fail-open server under failurePolicy
// Ignore too, kills both servers and checks both failure policies: Fail
// (the fail-closed registration) refuses VmTemplates ("failed calling
// webhook"), Ignore stores them unmodified. Every webhook call carries the
// API server's client certificate: the servers refuse calls without one,
// so the fixtures admitted before prove it was sent (see the positive
// controls in testAdmission and testOPAAdmission).
func testWebhookDown(t *testing.T, c *cluster, w webhookUnderTest) {
	ctx := context.Background()
	registerWebhook(t, c, w.name+"-ignore", w.name+"-ignore", w.ca, w.open.url, admissionregistrationv1.Ignore)
	w.closed.proc.Kill()
	w.open.proc.Kill()
	spec := map[string]any{"duration": "PT3H", "maxLatencyMs": int64(40), "originRegion": "westeurope", "residency": "EU"}

	fail, ignore := w.name+"-down-fail", w.name+"-down-ignore"
	c.namespace(t, fail, map[string]string{labelMode: w.name + "-closed"})
	_, err := c.vmtemplates(fail).Create(ctx, vmTemplate(fail, "batch", spec), metav1.CreateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || !strings.Contains(se.ErrStatus.Message, `failed calling webhook "schedule.vmtemplates.carbongate.io"`) {
		t.Errorf("failurePolicy Fail, %s down: create = %v, want refused for the failed webhook call", w.name, err)
	} else {
		t.Logf("failurePolicy Fail, %s down: %d %s", w.name, se.ErrStatus.Code, se.ErrStatus.Message)
	}

	c.namespace(t, ignore, map[string]string{labelMode: w.name + "-ignore"})
	out, err := c.vmtemplates(ignore).Create(ctx, vmTemplate(ignore, "batch", spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("failurePolicy Ignore, %s down: create = %v, want admitted unmodified", w.name, err)
	}
	if got := normalize(t, out.Object["spec"]); !reflect.DeepEqual(got, normalize(t, spec)) || len(out.GetAnnotations()) != 0 {
		t.Errorf("failurePolicy Ignore: stored spec %v annotations %v, want the object as sent", got, out.GetAnnotations())
	}
}
