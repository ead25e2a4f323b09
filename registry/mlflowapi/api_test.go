package mlflowapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/filter"
	"github.com/carbongate/carbongate/registry/mlflowapi"
)

const de = "carbon-forecaster-DE"

// step is one request of a scripted session and its golden response.
type step struct {
	golden       string // "{}" for responses that must be {}, "" for any 200
	method, path string
	body         string
}

// session walks every endpoint once, in an order where each response is
// reproducible, and compares each response with its golden file.
var session = []step{
	{"create_model", "POST", "/registered-models/create",
		`{"name": "carbon-forecaster-DE", "description": "DE forecaster", "tags": [{"key": "zone", "value": "DE"}]}`},
	{"create_version", "POST", "/model-versions/create",
		`{"name": "carbon-forecaster-DE", "source": "s3://models/de/1", "run_id": "0a1b2c", "tags": [{"key": "mae", "value": "12.5"}], "description": "first", "run_link": "http://mlflow/runs/0a1b2c"}`},
	{"", "POST", "/model-versions/create", `{"name": "carbon-forecaster-DE", "source": "s3://models/de/2"}`},
	{"", "POST", "/model-versions/create", `{"name": "carbon-forecaster-DE", "source": "s3://models/de/3", "model_id": "m-123"}`},
	{"{}", "POST", "/registered-models/alias", `{"name": "carbon-forecaster-DE", "alias": "champion", "version": "2"}`},
	{"transition_stage", "POST", "/model-versions/transition-stage",
		`{"name": "carbon-forecaster-DE", "version": "2", "stage": "production", "archive_existing_versions": true}`},
	{"{}", "POST", "/registered-models/set-tag", `{"name": "carbon-forecaster-DE", "key": "signal", "value": "average"}`},
	{"{}", "POST", "/model-versions/set-tag", `{"name": "carbon-forecaster-DE", "version": "2", "key": "horizon", "value": "72h"}`},
	{"get_model", "GET", "/registered-models/get?name=carbon-forecaster-DE", ""},
	{"get_version", "GET", "/model-versions/get?name=carbon-forecaster-DE&version=2", ""},
	{"get_by_alias", "GET", "/registered-models/alias?name=carbon-forecaster-DE&alias=champion", ""},
	{"latest_versions", "GET", "/registered-models/get-latest-versions?name=carbon-forecaster-DE&stages=Production&stages=none", ""},
	{"latest_versions", "POST", "/registered-models/get-latest-versions", `{"name": "carbon-forecaster-DE", "stages": ["Production", "none"]}`},
	{"download_uri", "GET", "/model-versions/get-download-uri?name=carbon-forecaster-DE&version=1", ""},
	{"search_models", "GET", "/registered-models/search?filter=" + url.QueryEscape("name LIKE 'carbon-%' AND tag.`mlflow.prompt.is_prompt` != 'true'") + "&max_results=10", ""},
	{"search_versions", "GET", "/model-versions/search?filter=" + url.QueryEscape("name = 'carbon-forecaster-DE' AND version_number != 2") + "&order_by=version_number+DESC", ""},
	{"update_model", "PATCH", "/registered-models/update", `{"name": "carbon-forecaster-DE", "description": "updated"}`},
	{"update_version", "PATCH", "/model-versions/update", `{"name": "carbon-forecaster-DE", "version": "1", "description": "updated"}`},
	{"{}", "DELETE", "/model-versions/delete-tag", `{"name": "carbon-forecaster-DE", "version": "1", "key": "mae"}`},
	{"{}", "DELETE", "/registered-models/delete-tag?name=carbon-forecaster-DE&key=signal", ""},
	{"{}", "DELETE", "/registered-models/alias", `{"name": "carbon-forecaster-DE", "alias": "champion"}`},
	{"{}", "DELETE", "/model-versions/delete", `{"name": "carbon-forecaster-DE", "version": "3"}`},
	{"rename_model", "POST", "/registered-models/rename", `{"name": "carbon-forecaster-DE", "new_name": "carbon-forecaster-DE-LU"}`},
	{"{}", "DELETE", "/registered-models/delete", `{"name": "carbon-forecaster-DE-LU"}`},
}

// TestSession runs the session under both prefixes; the responses must be
// the golden ones (MLflow's shapes: snake_case, string versions, int64 ms
// timestamps, unset fields omitted).
func TestSession(t *testing.T) {
	t.Parallel()
	for _, prefix := range []string{mlflowapi.PrefixAPI, mlflowapi.PrefixAjax} {
		t.Run(strings.Trim(prefix, "/"), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mlflowapi.Config{Token: testToken}, nil)
			for _, s := range session {
				r := e.must(s.method, prefix+s.path, s.body)
				switch s.golden {
				case "":
					continue
				case "{}":
					if got := strings.TrimSpace(string(r.body)); got != "{}" {
						t.Fatalf("%s %s: body %s, want {}", s.method, s.path, got)
					}
					continue
				}
				if ct := r.header.Get("Content-Type"); ct != echo.MIMEApplicationJSON {
					t.Fatalf("%s %s: Content-Type %q", s.method, s.path, ct)
				}
				golden(t, s.golden, r.body)
			}
			if r := e.do("GET", prefix+"/registered-models/get?name="+de, ""); r.status != http.StatusNotFound {
				t.Fatalf("model still there after delete: %d %s", r.status, r.body)
			}
		})
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	want := []string{
		"POST /registered-models/create", "GET /registered-models/get", "POST /registered-models/rename",
		"PATCH /registered-models/update", "DELETE /registered-models/delete", "GET /registered-models/search",
		"GET /registered-models/get-latest-versions", "POST /registered-models/get-latest-versions",
		"POST /registered-models/set-tag", "DELETE /registered-models/delete-tag",
		"POST /registered-models/alias", "DELETE /registered-models/alias", "GET /registered-models/alias",
		"POST /model-versions/create", "GET /model-versions/get", "PATCH /model-versions/update",
		"DELETE /model-versions/delete", "POST /model-versions/transition-stage", "GET /model-versions/search",
		"GET /model-versions/get-download-uri", "POST /model-versions/set-tag", "DELETE /model-versions/delete-tag",
	}
	var got []string
	for _, r := range e.api.Routes() {
		got = append(got, strings.Replace(r, mlflowapi.PrefixAPI, "", 1))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Routes() = %q\nwant %q", got, want)
	}
	var mounted []string
	for _, r := range e.e.Router().Routes() {
		mounted = append(mounted, r.Method+" "+r.Path)
	}
	for _, prefix := range []string{mlflowapi.PrefixAPI, mlflowapi.PrefixAjax} {
		for _, w := range want {
			method, path, _ := strings.Cut(w, " ")
			if !slices.Contains(mounted, method+" "+prefix+path) {
				t.Errorf("%s %s%s is not mounted", method, prefix, path)
			}
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	for _, cfg := range []mlflowapi.Config{
		{},
		{Store: e.store, MaxBodyBytes: -1},
		{Store: e.store, Timeout: -1},
		{Store: e.store, Token: " padded "},
	} {
		if _, err := mlflowapi.New(cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
}

// TestArtifactURI checks that get-download-uri goes through Config's
// mapping, and that the default is the storage location, else the source.
func TestArtifactURI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{ArtifactURI: func(v registry.ModelVersion) string {
		rest, ok := strings.CutPrefix(v.ArtifactLocation(), "mlflow-artifacts:/")
		if !ok {
			return v.ArtifactLocation()
		}
		return "s3://bucket/artifacts/" + rest
	}}, nil)
	e.must("POST", mlflowapi.PrefixAPI+"/registered-models/create", `{"name": "m"}`)
	e.must("POST", mlflowapi.PrefixAPI+"/model-versions/create", `{"name": "m", "source": "mlflow-artifacts:/1/abc/artifacts/model"}`)
	r := e.must("GET", mlflowapi.PrefixAPI+"/model-versions/get-download-uri?name=m&version=1", "")
	if got, want := r.json(t)["artifact_uri"], "s3://bucket/artifacts/1/abc/artifacts/model"; got != want {
		t.Fatalf("artifact_uri = %v, want %v", got, want)
	}
}

// TestPaging pages through both searches and checks MLflow's tokens.
func TestPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	var names []string
	for _, n := range []string{"m-g", "m-a", "m-e", "m-c", "m-b", "m-f", "m-d"} {
		e.must("POST", mlflowapi.PrefixAPI+"/registered-models/create", `{"name": "`+n+`"}`)
		names = append(names, n)
	}
	for range 5 {
		e.must("POST", mlflowapi.PrefixAPI+"/model-versions/create", `{"name": "m-a", "source": "s3://b/x"}`)
	}
	slices.Sort(names)

	var got []string
	token, pages := "", 0
	for {
		q := url.Values{"max_results": {"3"}, "filter": {"name LIKE 'm-%'"}}
		if token != "" {
			q.Set("page_token", token)
		}
		m := e.must("GET", mlflowapi.PrefixAPI+"/registered-models/search?"+q.Encode(), "").json(t)
		for _, rm := range m["registered_models"].([]any) {
			got = append(got, rm.(map[string]any)["name"].(string))
		}
		pages++
		next, _ := m["next_page_token"].(string)
		if next == "" {
			break
		}
		if want := filter.EncodePageToken(3 * pages); next != want {
			t.Fatalf("next_page_token = %q, want %q", next, want)
		}
		token = next
	}
	if pages != 3 || !reflect.DeepEqual(got, names) {
		t.Fatalf("%d pages of %q, want 3 pages of %q", pages, got, names)
	}

	var versions []string
	token = ""
	for {
		q := url.Values{"max_results": {"2"}, "order_by": {"version_number ASC"}}
		if token != "" {
			q.Set("page_token", token)
		}
		m := e.must("GET", mlflowapi.PrefixAPI+"/model-versions/search?"+q.Encode(), "").json(t)
		for _, v := range m["model_versions"].([]any) {
			versions = append(versions, v.(map[string]any)["version"].(string))
		}
		if token, _ = m["next_page_token"].(string); token == "" {
			break
		}
	}
	if want := []string{"1", "2", "3", "4", "5"}; !reflect.DeepEqual(versions, want) {
		t.Fatalf("versions %q, want %q", versions, want)
	}
}

// TestPrompts checks MLflow's prompt handling: the client's
// "tag.`mlflow.prompt.is_prompt` != 'true'" matches untagged models and
// drops prompts; asking for prompts returns only them.
func TestPrompts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	e.must("POST", mlflowapi.PrefixAPI+"/registered-models/create", `{"name": "model"}`)
	e.must("POST", mlflowapi.PrefixAPI+"/registered-models/create",
		`{"name": "prompt", "tags": [{"key": "mlflow.prompt.is_prompt", "value": "true"}]}`)
	search := func(f string) []string {
		m := e.must("GET", mlflowapi.PrefixAPI+"/registered-models/search?filter="+url.QueryEscape(f), "").json(t)
		var names []string
		rms, _ := m["registered_models"].([]any)
		for _, rm := range rms {
			names = append(names, rm.(map[string]any)["name"].(string))
		}
		return names
	}
	for f, want := range map[string][]string{
		"tag.`mlflow.prompt.is_prompt` != 'true'": {"model"},
		"": {"model"},
		"name LIKE '%' AND tags.`mlflow.prompt.is_prompt` = 'true'": {"prompt"},
		"tags.`mlflow.prompt.is_prompt` != 'false'":                 {"prompt"},
	} {
		if got := search(f); !reflect.DeepEqual(got, want) {
			t.Errorf("search(%q) = %q, want %q", f, got, want)
		}
	}
}

// TestDeleteForms checks that DELETE takes a JSON body (as MLflow's client
// sends it) or query parameters, and that deleting an absent tag or alias
// of an existing model succeeds, as in MLflow.
func TestDeleteForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	p := mlflowapi.PrefixAPI
	e.must("POST", p+"/registered-models/create", `{"name": "m", "tags": [{"key": "a", "value": "1"}]}`)
	e.must("POST", p+"/model-versions/create", `{"name": "m", "source": "s3://b/1"}`)
	e.must("DELETE", p+"/registered-models/delete-tag", `{"name": "m", "key": "a"}`)
	e.must("DELETE", p+"/registered-models/delete-tag?name=m&key=a", "")
	e.must("DELETE", p+"/registered-models/alias?name=m&alias=never-set", "")
	e.must("DELETE", p+"/model-versions/delete-tag?name=m&version=1&key=absent", "")
	if r := e.do("DELETE", p+"/registered-models/delete-tag?name=nope&key=a", ""); r.status != http.StatusNotFound {
		t.Fatalf("delete-tag on a missing model: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", p+"/model-versions/delete-tag?name=m&version=9&key=a", ""); r.status != http.StatusNotFound {
		t.Fatalf("delete-tag on a missing version: %d %s", r.status, r.body)
	}
	e.must("DELETE", p+"/model-versions/delete?name=m&version=1", "")
	e.must("DELETE", p+"/registered-models/delete?name=m", "")
}

// TestVersionSearchDefaultOrder checks MLflow's default order of
// model-versions/search: last update first, then name, then version
// descending.
func TestVersionSearchDefaultOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	p := mlflowapi.PrefixAPI
	e.must("POST", p+"/registered-models/create", `{"name": "m"}`)
	for range 3 {
		e.must("POST", p+"/model-versions/create", `{"name": "m", "source": "s3://b/x"}`)
	}
	e.must("PATCH", p+"/model-versions/update", `{"name": "m", "version": "1", "description": "touched"}`)
	m := e.must("GET", p+"/model-versions/search?filter="+url.QueryEscape("name = 'm'"), "").json(t)
	var got []string
	for _, v := range m["model_versions"].([]any) {
		got = append(got, v.(map[string]any)["version"].(string))
	}
	if want := []string{"1", "3", "2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("versions %q, want %q", got, want)
	}
}

// TestTagLimits: the tags of one version are capped
// (registry.ValidateTagTotals); the API answers MLflow's
// INVALID_PARAMETER_VALUE, 400, for the tag over the cap.
func TestTagLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mlflowapi.Config{}, nil)
	p := mlflowapi.PrefixAPI
	e.must("POST", p+"/registered-models/create", `{"name": "m"}`)
	e.must("POST", p+"/model-versions/create", `{"name": "m", "source": "s3://b/1"}`)
	for i := range registry.MaxTags {
		e.must("POST", p+"/model-versions/set-tag", fmt.Sprintf(`{"name": "m", "version": "1", "key": "k%03d", "value": "v"}`, i))
	}
	r := e.do("POST", p+"/model-versions/set-tag", `{"name": "m", "version": "1", "key": "over", "value": "v"}`)
	if r.status != http.StatusBadRequest || r.errorCode(t) != "INVALID_PARAMETER_VALUE" {
		t.Fatalf("set-tag over the cap: %d %s, want 400 INVALID_PARAMETER_VALUE", r.status, r.body)
	}
}
