package mlflowapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowapi"
)

// seeded returns an env holding model "m" with versions 1 and 2 and alias
// champion -> 1.
func seeded(t *testing.T, cfg mlflowapi.Config, wrap func(registry.Store) registry.Store) *env {
	t.Helper()
	e := newEnv(t, cfg, wrap)
	p := mlflowapi.PrefixAPI
	e.must("POST", p+"/registered-models/create", `{"name": "m"}`)
	e.must("POST", p+"/model-versions/create", `{"name": "m", "source": "s3://b/1"}`)
	e.must("POST", p+"/model-versions/create", `{"name": "m", "source": "s3://b/2"}`)
	e.must("POST", p+"/registered-models/alias", `{"name": "m", "alias": "champion", "version": "1"}`)
	return e
}

func TestErrors(t *testing.T) {
	t.Parallel()
	e := seeded(t, mlflowapi.Config{Token: testToken}, nil)
	q := url.QueryEscape
	tests := []struct {
		note         string
		method, path string
		body         string
		header       []string
		status       int
		code         string
		message      string // a part of the message
	}{
		// RESOURCE_DOES_NOT_EXIST
		{note: "missing model", method: "GET", path: "/registered-models/get?name=nope", status: 404, code: "RESOURCE_DOES_NOT_EXIST"},
		{note: "missing version", method: "GET", path: "/model-versions/get?name=m&version=9", status: 404, code: "RESOURCE_DOES_NOT_EXIST"},
		{note: "delete missing model", method: "DELETE", path: "/registered-models/delete", body: `{"name": "nope"}`, status: 404, code: "RESOURCE_DOES_NOT_EXIST"},
		{note: "version of missing model", method: "POST", path: "/model-versions/create", body: `{"name": "nope", "source": "s3://b/1"}`, status: 404, code: "RESOURCE_DOES_NOT_EXIST"},
		{note: "alias to missing version", method: "POST", path: "/registered-models/alias", body: `{"name": "m", "alias": "a", "version": "7"}`, status: 404, code: "RESOURCE_DOES_NOT_EXIST"},
		// RESOURCE_ALREADY_EXISTS
		{note: "duplicate model", method: "POST", path: "/registered-models/create", body: `{"name": "m"}`, status: 400, code: "RESOURCE_ALREADY_EXISTS"},
		// INVALID_PARAMETER_VALUE
		{note: "missing alias", method: "GET", path: "/registered-models/alias?name=m&alias=challenger", status: 400, code: "INVALID_PARAMETER_VALUE", message: "Registered model alias challenger not found."},
		{note: "alias of missing model", method: "GET", path: "/registered-models/alias?name=nope&alias=champion", status: 400, code: "INVALID_PARAMETER_VALUE"},
		{note: "missing name", method: "GET", path: "/registered-models/get", status: 400, code: "INVALID_PARAMETER_VALUE", message: "Missing value for required parameter 'name'."},
		{note: "missing name in body", method: "POST", path: "/registered-models/create", body: `{}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "'name'"},
		{note: "missing source", method: "POST", path: "/model-versions/create", body: `{"name": "m"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "'source'"},
		{note: "missing version", method: "GET", path: "/model-versions/get?name=m", status: 400, code: "INVALID_PARAMETER_VALUE", message: "'version'"},
		{note: "bad version", method: "GET", path: "/model-versions/get?name=m&version=abc", status: 400, code: "INVALID_PARAMETER_VALUE", message: "not a version number"},
		{note: "version as a number", method: "PATCH", path: "/model-versions/update", body: `{"name": "m", "version": 1}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "parameter 'version': expected string, got number"},
		{note: "unknown field", method: "POST", path: "/registered-models/create", body: `{"name": "x", "descripton": "typo"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "unknown parameter 'descripton'"},
		{note: "field given twice", method: "POST", path: "/registered-models/create", body: `{"name": "x", "description": "a", "name": "y"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "parameter 'name' is given twice"},
		{note: "unknown tag field", method: "POST", path: "/registered-models/create", body: `{"name": "x", "tags": [{"key": "k", "val": "v"}]}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "'val'"},
		{note: "malformed JSON", method: "POST", path: "/registered-models/create", body: `{"name": `, status: 400, code: "INVALID_PARAMETER_VALUE", message: "malformed request body"},
		{note: "trailing data", method: "POST", path: "/registered-models/create", body: `{"name": "x"} {}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "after the JSON object"},
		{note: "array body", method: "POST", path: "/registered-models/create", body: `[1]`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "expected a JSON object"},
		{note: "bool as string", method: "POST", path: "/model-versions/transition-stage", body: `{"name": "m", "version": "1", "stage": "Staging", "archive_existing_versions": "yes"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "archive_existing_versions"},
		{note: "no content type", method: "POST", path: "/registered-models/create", body: `{"name": "x"}`, header: []string{"Content-Type", ""}, status: 400, code: "INVALID_PARAMETER_VALUE", message: "Content-Type header is missing"},
		{note: "form content type", method: "POST", path: "/registered-models/create", body: `{"name": "x"}`, header: []string{"Content-Type", "application/x-www-form-urlencoded"}, status: 400, code: "INVALID_PARAMETER_VALUE", message: "Content-Type must be"},
		{note: "bad name", method: "POST", path: "/registered-models/create", body: `{"name": "a/b"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "may not contain"},
		{note: "NUL in name", method: "POST", path: "/registered-models/create", body: `{"name": "a\u0000b"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "NUL"},
		{note: "NUL in tag value", method: "POST", path: "/registered-models/set-tag", body: `{"name": "m", "key": "k", "value": "\u0000"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "'value' contains a NUL"},
		{note: "bad UTF-8 in query", method: "GET", path: "/registered-models/get?name=%ff", status: 400, code: "INVALID_PARAMETER_VALUE", message: "UTF-8"},
		{note: "long tag key", method: "POST", path: "/registered-models/set-tag", body: `{"name": "m", "key": "` + strings.Repeat("k", 251) + `", "value": "v"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "limit is 250"},
		{note: "long model description", method: "PATCH", path: "/registered-models/update", body: `{"name": "m", "description": "` + strings.Repeat("d", registry.MaxDescriptionLen+1) + `"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "limit is 5000"},
		{note: "long version description", method: "PATCH", path: "/model-versions/update", body: `{"name": "m", "version": "1", "description": "` + strings.Repeat("d", registry.MaxDescriptionLen+1) + `"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "limit is 5000"},
		{note: "long source", method: "POST", path: "/model-versions/create", body: `{"name": "m", "source": "s3://b/` + strings.Repeat("s", registry.MaxSourceLen) + `"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "limit is 500"},
		{note: "long run_link", method: "POST", path: "/model-versions/create", body: `{"name": "m", "source": "s3://b/1", "run_link": "` + strings.Repeat("r", registry.MaxRunLinkLen+1) + `"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "run_link"},
		{note: "reserved alias", method: "POST", path: "/registered-models/alias", body: `{"name": "m", "alias": "latest", "version": "1"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "reserved"},
		{note: "version alias", method: "POST", path: "/registered-models/alias", body: `{"name": "m", "alias": "v2", "version": "1"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "reserved"},
		{note: "bad stage", method: "POST", path: "/model-versions/transition-stage", body: `{"name": "m", "version": "1", "stage": "Prod"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "invalid model version stage"},
		{note: "archive from None", method: "POST", path: "/model-versions/transition-stage", body: `{"name": "m", "version": "1", "stage": "None", "archive_existing_versions": true}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "not an Active stage"},
		{note: "bad latest stage", method: "GET", path: "/registered-models/get-latest-versions?name=m&stages=Gold", status: 400, code: "INVALID_PARAMETER_VALUE"},
		{note: "relative source", method: "POST", path: "/model-versions/create", body: `{"name": "m", "source": "s3://b/m/../../etc"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "Invalid model version source"},
		{note: "encoded relative source", method: "POST", path: "/model-versions/create", body: `{"name": "m", "source": "s3://b/m/%252e%252e/x"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "Invalid model version source"},
		{note: "bad filter", method: "GET", path: "/registered-models/search?filter=" + q("name = 'a' OR name = 'b'"), status: 400, code: "INVALID_PARAMETER_VALUE", message: "expected AND"},
		{note: "model filter on run_id", method: "GET", path: "/registered-models/search?filter=" + q("run_id = 'a'"), status: 400, code: "INVALID_PARAMETER_VALUE", message: "invalid attribute key"},
		{note: "bad order_by", method: "GET", path: "/model-versions/search?order_by=" + q("stage DESC"), status: 400, code: "INVALID_PARAMETER_VALUE", message: "invalid order_by key"},
		{note: "bad page token", method: "GET", path: "/registered-models/search?page_token=xyz", status: 400, code: "INVALID_PARAMETER_VALUE", message: "page token"},
		{note: "max_results too big", method: "GET", path: "/registered-models/search?max_results=1001", status: 400, code: "INVALID_PARAMETER_VALUE", message: "between 1 and 1000"},
		{note: "max_results zero", method: "GET", path: "/model-versions/search?max_results=0", status: 400, code: "INVALID_PARAMETER_VALUE"},
		{note: "max_results versions limit", method: "GET", path: "/model-versions/search?max_results=200001", status: 400, code: "INVALID_PARAMETER_VALUE", message: "200000"},
		{note: "max_results not a number", method: "GET", path: "/registered-models/search?max_results=ten", status: 400, code: "INVALID_PARAMETER_VALUE", message: "max_results"},
		{note: "new_name missing", method: "POST", path: "/registered-models/rename", body: `{"name": "m"}`, status: 400, code: "INVALID_PARAMETER_VALUE", message: "'new_name'"},
		// UNAUTHENTICATED
		{note: "no token", method: "POST", path: "/registered-models/create", body: `{"name": "x"}`, header: []string{"Authorization", ""}, status: 401, code: "UNAUTHENTICATED"},
		{note: "wrong token", method: "DELETE", path: "/registered-models/delete?name=m", header: []string{"Authorization", "Bearer wrong"}, status: 401, code: "UNAUTHENTICATED"},
		{note: "token prefix", method: "PATCH", path: "/registered-models/update", body: `{"name": "m"}`, header: []string{"Authorization", "Bearer " + testToken[:4]}, status: 401, code: "UNAUTHENTICATED"},
		{note: "basic auth", method: "POST", path: "/registered-models/create", body: `{"name": "x"}`, header: []string{"Authorization", "Basic " + testToken}, status: 401, code: "UNAUTHENTICATED"},
		// Not MLflow's own: routes that do not exist, wrong methods.
		{note: "unknown endpoint", method: "GET", path: "/registered-models/list", status: 404, code: "ENDPOINT_NOT_FOUND"},
		{note: "wrong method", method: "GET", path: "/registered-models/create?name=x", status: 405, code: "BAD_REQUEST"},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			r := e.do(tt.method, mlflowapi.PrefixAPI+tt.path, tt.body, tt.header...)
			if r.status != tt.status || r.errorCode(t) != tt.code {
				t.Fatalf("%s %s: %d %s, want %d %s", tt.method, tt.path, r.status, r.body, tt.status, tt.code)
			}
			if msg, _ := r.json(t)["message"].(string); !strings.Contains(msg, tt.message) {
				t.Fatalf("message %q does not contain %q", msg, tt.message)
			}
			if strings.Contains(string(r.body), testToken) {
				t.Fatalf("the response shows the token: %s", r.body)
			}
		})
	}
	if strings.Contains(e.logs.String(), testToken) {
		t.Fatalf("the log shows the token: %s", e.logs.String())
	}
}

// TestAuth checks which requests need the token.
func TestAuth(t *testing.T) {
	t.Parallel()
	e := seeded(t, mlflowapi.Config{Token: testToken}, nil)
	p := mlflowapi.PrefixAjax
	noToken := []string{"Authorization", ""}
	for _, read := range []struct{ method, path, body string }{
		{"GET", "/registered-models/get?name=m", ""},
		{"GET", "/registered-models/search", ""},
		{"GET", "/model-versions/search", ""},
		{"POST", "/registered-models/get-latest-versions", `{"name": "m"}`},
	} {
		if r := e.do(read.method, p+read.path, read.body, noToken...); r.status != http.StatusOK {
			t.Errorf("%s %s without a token: %d %s", read.method, read.path, r.status, r.body)
		}
	}
	r := e.do("POST", p+"/registered-models/set-tag", `{"name": "m", "key": "k", "value": "v"}`, noToken...)
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") != "Bearer" {
		t.Fatalf("write without a token: %d %v %s", r.status, r.header, r.body)
	}
	if r := e.do("POST", p+"/registered-models/set-tag", `{"name": "m", "key": "k", "value": "v"}`, "Authorization", "bearer "+testToken); r.status != http.StatusOK {
		t.Fatalf("write with a lower-case scheme: %d %s", r.status, r.body)
	}

	closed := seeded(t, mlflowapi.Config{Token: testToken, AuthReads: true}, nil)
	if r := closed.do("GET", p+"/registered-models/get?name=m", "", noToken...); r.status != http.StatusUnauthorized {
		t.Fatalf("read without a token, AuthReads: %d %s", r.status, r.body)
	}
	closed.must("GET", p+"/registered-models/get?name=m", "")

	open := seeded(t, mlflowapi.Config{}, nil)
	if r := open.do("POST", p+"/registered-models/set-tag", `{"name": "m", "key": "k", "value": "v"}`, noToken...); r.status != http.StatusOK {
		t.Fatalf("write without a configured token: %d %s", r.status, r.body)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := seeded(t, mlflowapi.Config{MaxBodyBytes: 256}, nil)
	big := `{"name": "m", "key": "k", "value": "` + strings.Repeat("x", 300) + `"}`
	r := e.do("POST", mlflowapi.PrefixAPI+"/registered-models/set-tag", big)
	if r.status != http.StatusRequestEntityTooLarge || r.errorCode(t) != "INVALID_PARAMETER_VALUE" {
		t.Fatalf("big body: %d %s", r.status, r.body)
	}
	small := `{"name": "m", "key": "k", "value": "v"}`
	if r := e.do("POST", mlflowapi.PrefixAPI+"/registered-models/set-tag", small); r.status != http.StatusOK {
		t.Fatalf("small body: %d %s", r.status, r.body)
	}
}

// failing is a store whose every call fails with err (or panics when err
// is nil).
type failing struct {
	registry.Store
	err error
}

func (f failing) GetModel(context.Context, string) (registry.RegisteredModel, error) {
	if f.err == nil {
		panic("store bug")
	}
	return registry.RegisteredModel{}, f.err
}

func (f failing) SearchVersions(context.Context, registry.Search) ([]registry.ModelVersion, bool, error) {
	return nil, false, f.err
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	secret := errors.New(`pq: password authentication failed for user "registry" at 10.0.0.7`)
	tests := []struct {
		note   string
		err    error
		status int
		code   string
		logged bool
	}{
		{"unavailable", forecast.Errorf(forecast.EUNAVAILABLE, "the registry database is down"), 503, "TEMPORARILY_UNAVAILABLE", false},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), 503, "TEMPORARILY_UNAVAILABLE", false},
		{"unauthorized", forecast.Errorf(forecast.EUNAUTHORIZED, "no"), 401, "UNAUTHENTICATED", false},
		{"raw driver error", secret, 500, "INTERNAL_ERROR", true},
		{"internal", forecast.Errorf(forecast.EINTERNAL, "bug: %v", secret), 500, "INTERNAL_ERROR", true},
		{"panic", nil, 500, "INTERNAL_ERROR", true},
	}
	for _, tt := range tests {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mlflowapi.Config{}, func(s registry.Store) registry.Store { return failing{s, tt.err} })
			for _, path := range []string{"/registered-models/get?name=m", "/model-versions/search"} {
				if tt.err == nil && strings.Contains(path, "search") {
					continue
				}
				r := e.do("GET", mlflowapi.PrefixAPI+path, "")
				if r.status != tt.status || r.errorCode(t) != tt.code {
					t.Fatalf("GET %s: %d %s, want %d %s", path, r.status, r.body, tt.status, tt.code)
				}
				if tt.status == 500 {
					if msg := r.json(t)["message"]; msg != "internal error" {
						t.Fatalf("500 message %q, want the generic one", msg)
					}
				}
			}
			logs := e.logs.String()
			if tt.logged && !strings.Contains(logs, "mlflowapi: request failed") {
				t.Fatalf("the failure is not logged: %q", logs)
			}
			if tt.err == secret && !strings.Contains(logs, "10.0.0.7") {
				t.Fatalf("the log lacks the cause: %q", logs)
			}
		})
	}
}

// TestNoServerErrors sends junk to every endpoint: nothing a client sends
// may cause a 5xx.
func TestNoServerErrors(t *testing.T) {
	t.Parallel()
	e := seeded(t, mlflowapi.Config{}, nil)
	bodies := []string{
		``, `null`, `{}`, `[]`, `"x"`, `"{\"name\": \"m\"}"`, `"\"\""`, `1`, `{"name": null}`, `{"name": 1}`, `{"name": ["m"]}`,
		`{"name": "m", "version": "1", "key": "k", "value": "v", "alias": "a", "stage": "Staging", "source": "s3://b/x", "new_name": "n"}`,
		`{"name": "m", "version": "99999999999999999999"}`, `{"name": "m", "version": "-1"}`, `{"name": "m", "version": "0x1"}`,
		`{"name": "m", "tags": [null, {"key": ""}]}`, `{"name": "m", "stages": ["Production", 1]}`, `{"name": "m", "stages": "Production"}`,
		`{"name": "` + strings.Repeat("n", 300) + `"}`, `{"name": "m\u0000"}`, `{"name": "\ud800"}`, `{"name": "m"` + strings.Repeat(" ", 10) + `,}`,
		`{"name": "m", "alias": "` + strings.Repeat("a", 300) + `", "version": "1"}`, `{"name": "m", "source": "file:///etc/passwd"}`,
	}
	queries := []string{
		"", "name=m", "name=m&version=1", "name=m&version=x", "name=&version=", "name=m&alias=champion", "name=m&alias=",
		"filter=" + url.QueryEscape("name = 'm'; DROP TABLE registered_models; --"), "filter=%ff", "filter=" + url.QueryEscape("tags.`x` = '\x00'"),
		"max_results=-5", "max_results=99999999999999999999", "page_token=" + url.QueryEscape("eyJvZmZzZXQiOiAyMTQ3NDgzNjQ3fQ=="),
		"order_by=&order_by=name", "stages=&name=m", "name=m&stages=None&stages=None",
	}
	for _, rt := range e.api.Routes() {
		method, path, _ := strings.Cut(rt, " ")
		for _, b := range bodies {
			if r := e.do(method, path, b); r.status >= 500 {
				t.Errorf("%s %s %s: %d %s", method, path, b, r.status, r.body)
			}
		}
		for _, q := range queries {
			if r := e.do(method, path+"?"+q, ""); r.status >= 500 {
				t.Errorf("%s %s?%s: %d %s", method, path, q, r.status, r.body)
			}
		}
	}
}
