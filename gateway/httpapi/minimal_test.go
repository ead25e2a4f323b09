package httpapi

import (
	"bytes"
	"encoding/json"
	"github.com/carbongate/carbongate/gateway/api"
	"net/http"
	"reflect"
	"testing"
)

// TestAppendScheduleMinimalMatchesEncodingJSON checks the minimal answer's
// encoder against encoding/json, byte for byte.
func TestAppendScheduleMinimalMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	type source struct {
		Source string `json:"source"`
	}
	type minimal struct {
		Decision   api.Placement     `json:"decision"`
		SavingsPct *float64          `json:"savings_pct,omitempty"`
		SavingsG   *float64          `json:"savings_g,omitempty"`
		Provenance map[string]source `json:"provenance"`
		RequestID  string            `json:"request_id"`
	}
	for i, b := range randomSchedules(500) {
		m := minimal{Decision: b.Decision, SavingsPct: b.SavingsPct, SavingsG: b.SavingsG, RequestID: b.RequestID}
		if b.Provenance != nil {
			m.Provenance = map[string]source{}
			for z, p := range b.Provenance {
				m.Provenance[z] = source{p.Source}
			}
		}
		want := encodingJSON(t, m)
		got, err := appendScheduleMinimal(nil, &b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("case %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func TestPreferMinimal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		note   string
		prefer []string
		want   bool
	}{
		{"absent", nil, false},
		{"exact", []string{"return=minimal"}, true},
		{"case and spaces", []string{" Return = MINIMAL "}, true},
		{"quoted", []string{`return="minimal"`}, true},
		{"with a parameter", []string{"return=minimal; foo=bar"}, true},
		{"among others", []string{"respond-async, wait=10, return=minimal"}, true},
		{"in a second header", []string{"wait=10", "return=minimal"}, true},
		{"representation", []string{"return=representation"}, false},
		{"no value", []string{"return"}, false},
		{"other preference named minimal", []string{"handling=minimal"}, false},
		{"as a parameter", []string{"respond-async; return=minimal"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for _, v := range tt.prefer {
				h.Add("Prefer", v)
			}
			if got := preferMinimal(h); got != tt.want {
				t.Fatalf("preferMinimal(Prefer: %q) = %v, want %v", tt.prefer, got, tt.want)
			}
		})
	}
}

// TestScheduleMinimalOverHTTP checks that Prefer: return=minimal gets the
// minimal answer, marked Preference-Applied, whose members are the full
// answer's (same decision, saving, sources and request id) and which
// matches its OpenAPI schema.
func TestScheduleMinimalOverHTTP(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t)
	fullResp, full := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance), "X-Request-Id", "same-id")
	minResp, min := do(t, "POST", ts.URL+"/v1/schedule", "application/json", []byte(acceptance), "X-Request-Id", "same-id", "Prefer", "return=minimal")
	if fullResp.StatusCode != 200 || minResp.StatusCode != 200 {
		t.Fatalf("status %d and %d: %s %s", fullResp.StatusCode, minResp.StatusCode, full, min)
	}
	if got := fullResp.Header.Get("Preference-Applied"); got != "" {
		t.Errorf("full answer: Preference-Applied %q, want none", got)
	}
	if got, want := minResp.Header.Get("Preference-Applied"), "return=minimal"; got != want {
		t.Errorf("minimal answer: Preference-Applied %q, want %q", got, want)
	}
	var f, m map[string]any
	if err := json.Unmarshal(full, &f); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(min, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"decision", "savings_pct", "request_id"} {
		if !reflect.DeepEqual(m[k], f[k]) || f[k] == nil {
			t.Errorf("%s: minimal %v, full %v", k, m[k], f[k])
		}
	}
	sources := map[string]any{}
	for z, p := range f["provenance"].(map[string]any) {
		sources[z] = map[string]any{"source": p.(map[string]any)["source"]}
	}
	if !reflect.DeepEqual(m["provenance"], sources) {
		t.Errorf("provenance: minimal %v, want the full answer's sources %v", m["provenance"], sources)
	}
	if len(m) != 4 {
		t.Errorf("minimal answer has %d members, want 4: %s", len(m), min)
	}
	var v any
	if err := json.Unmarshal(min, &v); err != nil {
		t.Fatal(err)
	}
	if err := validate(loadSpec(t), map[string]any{"$ref": "#/components/schemas/ScheduleMinimalResponse"}, v, "$"); err != nil {
		t.Fatalf("%v\n%s", err, min)
	}
	if len(min) >= len(full)/2 {
		t.Errorf("minimal answer %d bytes, full %d: want less than half", len(min), len(full))
	}
}
