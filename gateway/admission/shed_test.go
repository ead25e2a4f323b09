package admission

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/carbongate/carbongate/gateway/httpapi"
	"github.com/carbongate/carbongate/gateway/httpedge"
)

// TestShedAnswersAReview is the reproduction of the shed admission: with
// every request slot taken, the webhook route used to answer a bare 503,
// which an API server whose webhook fails closed turns into a denial of
// every workload without a reason. Now it answers an AdmissionReview:
// admitted unscheduled with a warning when failing open, denied with 503
// and the reason otherwise.
func TestShedAnswersAReview(t *testing.T) {
	t.Parallel()
	for _, failOpen := range []bool{true, false} {
		t.Run(map[bool]string{true: "fail-open", false: "fail-closed"}[failOpen], func(t *testing.T) {
			t.Parallel()
			g := newGateway(t)
			slow := &modeService{Service: g.Service, mode: "slow"}
			w, err := New(Config{Scheduler: g.Service, Data: mustBundle(t), FailOpen: failOpen})
			if err != nil {
				t.Fatal(err)
			}
			api, err := httpapi.New(httpapi.Config{Service: slow, Metrics: prometheus.NewRegistry(), MaxInFlight: 1,
				RequestTimeout: 3 * time.Second, Mount: w.Register, Routes: []httpedge.Route{w.Route()}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(api)
			t.Cleanup(srv.Close)
			var wg sync.WaitGroup
			defer wg.Wait()
			wg.Go(func() { // holds the one slot for 3 s
				if resp, err := http.Post(srv.URL+"/v1/schedule", "application/json", strings.NewReader(`{"zones":["DE"],"duration":"1h"}`)); err == nil {
					resp.Body.Close()
				}
			})
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				resp, err := http.Get(srv.URL + "/readyz")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusServiceUnavailable {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the slot was never taken")
				}
			}
			status, body := postReview(t, srv.URL, "application/json", validReview)
			if status != http.StatusOK {
				t.Fatalf("shed review: HTTP %d %s, want 200 with an AdmissionReview", status, body)
			}
			var rv admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &rv); err != nil || rv.Response == nil || rv.Kind != "AdmissionReview" ||
				rv.Response.UID != "705ab4f5-6393-11e8-b7cc-42010a800002" {
				t.Fatalf("shed review answer %s (%v)", body, err)
			}
			r := rv.Response
			switch {
			case failOpen && (!r.Allowed || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "overloaded")):
				t.Fatalf("fail-open shed review: %s, want allowed with a warning saying overloaded", body)
			case failOpen:
				if v := opValue(t, decodePatch(t, r), "/metadata/annotations/carbongate.io~1unscheduled"); v == nil {
					t.Fatalf("fail-open shed review without the unscheduled annotation: %s", body)
				}
			case r.Allowed || r.Result == nil || r.Result.Code != 503 || !strings.Contains(r.Result.Message, "overloaded"):
				t.Fatalf("fail-closed shed review: %s, want denied with 503 and the reason", body)
			}
		})
	}
}

// TestScanUID: the uid of a review whose body could not be read whole is
// taken from the part read.
func TestScanUID(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, prefix, want string
	}{
		{"whole", validReview, "705ab4f5-6393-11e8-b7cc-42010a800002"},
		{"cut in the object", validReview[:strings.Index(validReview, `"spec"`)], "705ab4f5-6393-11e8-b7cc-42010a800002"},
		{"uid after other members", `{"kind":"AdmissionReview","request":{"kind":{"group":"g"},"uid":"u-2","object":{"x":`, "u-2"},
		{"cut before the uid", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"ui`, ""},
		{"no request", `{"apiVersion":"admission.k8s.io/v1"}`, ""},
		{"not JSON", `<xml>`, ""},
		{"uid not a string", `{"request":{"uid":7}}`, ""},
	} {
		if got := string(scanUID([]byte(tt.prefix))); got != tt.want {
			t.Errorf("%s: uid %q, want %q", tt.name, got, tt.want)
		}
	}
}
