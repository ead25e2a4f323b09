package admission

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
)

// fakeData is a small region world: provider → regions, and measured
// round-trip times per provider.
type fakeData struct {
	regions map[string][]Region
	rtt     map[string]map[[2]string]float64 // provider → (from, to) → ms; no entry: no latency data
}

func (f fakeData) Regions(provider string) []Region { return slices.Clone(f.regions[provider]) }
func (f fakeData) HasLatency(provider string) bool  { return f.rtt[provider] != nil }
func (f fakeData) RTT(provider, from, to string) (float64, bool) {
	v, ok := f.rtt[provider][[2]string{from, to}]
	return v, ok
}

// world is the fakeData of the unit tests. Azure, with latency data
// (times from westeurope unless noted):
//
//	westeurope  NL           EU   the origin of most cases
//	northeurope IE           EU   10 ms (80 ms back: directional)
//	irelandb    IE           EU   15 ms (loses IE to northeurope on rtt despite its name)
//	germanywc   DE           EU   20 ms
//	germanyn    DE           EU   20 ms (ties germanywc: wins DE by name)
//	uksouth     GB                40 ms
//	swiss       (no zone)         30 ms
//	eastus      US-MIDA-PJM       90 ms
//	unmeasured  SE           EU   no measurement
//
// AWS has regions but no latency data.
func world() fakeData {
	az := []Region{
		{Name: "westeurope", Zone: "NL", EU: true},
		{Name: "northeurope", Zone: "IE", EU: true},
		{Name: "irelandb", Zone: "IE", EU: true},
		{Name: "germanywc", Zone: "DE", EU: true},
		{Name: "germanyn", Zone: "DE", EU: true},
		{Name: "uksouth", Zone: "GB"},
		{Name: "swiss", Zone: ""},
		{Name: "eastus", Zone: "US-MIDA-PJM"},
		{Name: "unmeasured", Zone: "SE", EU: true},
	}
	rtt := map[[2]string]float64{
		{"westeurope", "northeurope"}: 10, {"northeurope", "westeurope"}: 80, {"westeurope", "irelandb"}: 15,
		{"westeurope", "germanywc"}: 20, {"westeurope", "germanyn"}: 20,
		{"westeurope", "uksouth"}: 40, {"westeurope", "swiss"}: 30, {"westeurope", "eastus"}: 90,
		{"northeurope", "germanywc"}: 25, {"northeurope", "germanyn"}: 25, {"northeurope", "uksouth"}: 12,
		{"northeurope", "swiss"}: 35, {"northeurope", "eastus"}: 70,
		{"uksouth", "westeurope"}: 9, {"uksouth", "northeurope"}: 12,
		{"eastus", "westeurope"}: 85,
	}
	return fakeData{
		regions: map[string][]Region{
			"azure": az,
			"aws":   {{Name: "eu-central-1", Zone: "DE", EU: true}, {Name: "eu-west-2", Zone: "GB"}, {Name: "ca-west-1"}},
		},
		rtt: map[string]map[[2]string]float64{"azure": rtt},
	}
}

// fakeScheduler answers with the best zone of a fixed ranking (or the
// first zone asked), or with err; delay makes it slow (it honours ctx).
type fakeScheduler struct {
	ranking []forecast.Zone
	force   forecast.Zone // answer with this zone, asked or not
	// means, when set, are each zone's mean intensity in any window: the
	// answer is the zone of the lowest, with every asked zone's window as
	// the alternatives, best first.
	means map[forecast.Zone]float64
	err   error
	delay time.Duration

	mu   sync.Mutex
	reqs []gateway.Request
}

var t0 = time.Date(2021, 6, 1, 5, 0, 0, 0, time.UTC)

func (f *fakeScheduler) Schedule(ctx context.Context, req gateway.Request) (gateway.Decision, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return gateway.Decision{}, ctx.Err()
		}
	}
	if f.err != nil {
		return gateway.Decision{}, f.err
	}
	best := cmp.Or(f.force, req.Zones[0])
	for _, z := range f.ranking {
		if slices.Contains(req.Zones, z) {
			best = z
			break
		}
	}
	sv := 12.5
	d := gateway.Decision{
		Decision:   gateway.Placement{Zone: best, Start: t0, End: t0.Add(req.Duration), Mean: 101.25},
		Baseline:   &gateway.Placement{Zone: cmp.Or(req.Origin, req.Zones[0]), Start: t0, End: t0.Add(req.Duration), Mean: 120}, // not consistent with sv: a fake
		SavingsPct: &sv,
		Provenance: map[forecast.Zone]forecast.Provenance{},
	}
	for _, z := range req.Zones {
		d.Provenance[z] = forecast.Provenance{Source: forecast.SourceBaseline}
	}
	if f.means != nil {
		start := cmp.Or(req.EarliestStart, t0)
		for _, z := range req.Zones {
			d.Alternatives = append(d.Alternatives, gateway.Placement{Zone: z, Start: start, End: start.Add(req.Duration), Mean: f.means[z]})
		}
		slices.SortStableFunc(d.Alternatives, func(a, b gateway.Placement) int { return cmp.Compare(a.Mean, b.Mean) })
		d.Decision = d.Alternatives[0]
	}
	return d, nil
}

func (f *fakeScheduler) requests() []gateway.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// vmTemplate returns a VmTemplate object with spec; annotations nil means
// none.
func vmTemplate(t testing.TB, spec map[string]any, annotations map[string]string) []byte {
	t.Helper()
	meta := map[string]any{"name": "batch-1", "namespace": "jobs"}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	obj := map[string]any{"apiVersion": "carbongate.io/v1alpha1", "kind": "VmTemplate", "metadata": meta}
	if spec != nil {
		obj["spec"] = spec
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// baseSpec is a valid spec; edits change or (with nil) delete fields.
func baseSpec(edits map[string]any) map[string]any {
	s := map[string]any{
		"minCPU": 4, "minRAM": "16Gi", "duration": "PT3H", "deadline": "2021-06-03T00:00:00Z",
		"maxLatencyMs": 40, "originRegion": "westeurope", "provider": "azure",
	}
	for k, v := range edits {
		if v == nil {
			delete(s, k)
		} else {
			s[k] = v
		}
	}
	return s
}

func request(op admissionv1.Operation, obj, old []byte) *admissionv1.AdmissionRequest {
	return &admissionv1.AdmissionRequest{
		UID:       "uid-1",
		Kind:      metav1.GroupVersionKind{Group: Group, Version: Version, Kind: Kind},
		Resource:  metav1.GroupVersionResource{Group: Group, Version: Version, Resource: Resource},
		Operation: op,
		Object:    runtime.RawExtension{Raw: obj},
		OldObject: runtime.RawExtension{Raw: old},
	}
}

func newWebhook(t testing.TB, s Scheduler, failOpen bool, timeout time.Duration) *Webhook {
	t.Helper()
	w, err := New(Config{Scheduler: s, Data: world(), FailOpen: failOpen, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// decodePatch returns the JSONPatch of r as generic JSON.
func decodePatch(t testing.TB, r *admissionv1.AdmissionResponse) []map[string]any {
	t.Helper()
	if r.Patch == nil {
		if r.PatchType != nil {
			t.Fatalf("patchType %v without a patch", *r.PatchType)
		}
		return nil
	}
	if r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch {
		t.Fatalf("patchType=%v, want JSONPatch", r.PatchType)
	}
	var ops []map[string]any
	if err := json.Unmarshal(r.Patch, &ops); err != nil {
		t.Fatalf("patch %s: %v", r.Patch, err)
	}
	return ops
}
