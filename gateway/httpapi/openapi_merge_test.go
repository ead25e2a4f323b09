package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestMergeOpenAPI(t *testing.T) {
	t.Parallel()
	extra := []byte(`{"paths":{"/v1/extra":{"post":{"operationId":"extra","responses":{"200":{"description":"ok"}}}}},
		"components":{"schemas":{"Extra":{"type":"object"}}}}`)
	doc, err := mergeOpenAPI(openAPI, extra)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		OpenAPI    string                     `json:"openapi"`
		Paths      map[string]json.RawMessage `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if d.Paths["/v1/extra"] == nil || d.Paths["/v1/schedule"] == nil || d.Components.Schemas["Extra"] == nil || d.Components.Schemas["ErrorResponse"] == nil || d.OpenAPI == "" {
		t.Fatalf("merged document lacks a part: paths %d, schemas %d, openapi %q", len(d.Paths), len(d.Components.Schemas), d.OpenAPI)
	}
	for _, tt := range []struct{ frag, want string }{
		{`{"paths":{"/v1/schedule":{}}}`, "paths./v1/schedule is already in the document"},
		{`{"components":{"schemas":{"ErrorResponse":{}}}}`, "components.schemas.ErrorResponse is already in the document"},
		{`{"info":{}}`, `not "info"`},
		{`[`, "OpenAPI fragment"},
	} {
		if _, err := mergeOpenAPI(openAPI, []byte(tt.frag)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("merge %s: %v, want %q", tt.frag, err, tt.want)
		}
	}
	if same, err := mergeOpenAPI(openAPI, nil); err != nil || string(same) != string(openAPI) {
		t.Fatalf("merging nothing changed the document: %v", err)
	}
}
