package mlflowclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/mlflowclient"
)

// call is one request the fake server received.
type call struct {
	Method, Path string
	Query        url.Values
	Body         map[string]any
	Auth         string
}

// fake is an httptest server answering every request with status and body
// and recording the calls.
type fake struct {
	mu     sync.Mutex
	calls  []call
	answer func(c call) (int, string)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Auth: r.Header.Get("Authorization")}
	if b, _ := io.ReadAll(r.Body); len(b) > 0 {
		if err := json.Unmarshal(b, &c.Body); err != nil {
			http.Error(w, "bad json", 400)
			return
		}
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	status, body := f.answer(c)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (f *fake) last(t *testing.T) call {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		t.Fatal("no call made")
	}
	return f.calls[len(f.calls)-1]
}

// serve starts a fake answering status and body to everything, and a
// client of it.
func serve(t *testing.T, opts mlflowclient.Options, answer func(c call) (int, string)) (*fake, *mlflowclient.Client) {
	t.Helper()
	f := &fake{answer: answer}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := mlflowclient.New(srv.URL+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return f, c
}

func fixed(status int, body string) func(call) (int, string) {
	return func(call) (int, string) { return status, body }
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		note string
		url  string
		opts mlflowclient.Options
	}{
		{"empty", "", mlflowclient.Options{}},
		{"no scheme", "mlflow:5000", mlflowclient.Options{}},
		{"other scheme", "ftp://mlflow", mlflowclient.Options{}},
		{"no host", "http://", mlflowclient.Options{}},
		{"query", "http://mlflow?x=1", mlflowclient.Options{}},
		{"negative timeout", "http://mlflow", mlflowclient.Options{Timeout: -time.Second}},
	} {
		t.Run(tc.note, func(t *testing.T) {
			if _, err := mlflowclient.New(tc.url, tc.opts); forecast.ErrorCode(err) != forecast.EINVALID {
				t.Fatalf("New(%q) = %v, want EINVALID", tc.url, err)
			}
		})
	}
	c, err := mlflowclient.New("https://user:secret@mlflow.example/prefix/", mlflowclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.URL(), "https://mlflow.example/prefix"; got != want {
		t.Fatalf("URL() = %q, want %q", got, want)
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		note   string
		status int
		body   string
		want   string
	}{
		{"not found", 404, `{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Registered Model with name=x not found"}`, forecast.ENOTFOUND},
		{"exists", 400, `{"error_code":"RESOURCE_ALREADY_EXISTS","message":"exists"}`, forecast.ECONFLICT},
		{"invalid", 400, `{"error_code":"INVALID_PARAMETER_VALUE","message":"bad"}`, forecast.EINVALID},
		{"bad request", 400, `{"error_code":"BAD_REQUEST","message":"value too long"}`, forecast.EINVALID},
		{"unauthenticated", 401, `{"error_code":"UNAUTHENTICATED","message":"no"}`, forecast.EUNAUTHORIZED},
		{"permission denied", 403, `{"error_code":"PERMISSION_DENIED","message":"no"}`, forecast.EUNAUTHORIZED},
		{"401 without a body", 401, ``, forecast.EUNAUTHORIZED},
		{"403 html", 403, `<html>Forbidden</html>`, forecast.EUNAUTHORIZED},
		{"internal error", 500, `{"error_code":"INTERNAL_ERROR","message":"boom"}`, forecast.EUNAVAILABLE},
		{"502 html", 502, `<html>Bad Gateway</html>`, forecast.EUNAVAILABLE},
		{"503", 503, ``, forecast.EUNAVAILABLE},
		{"429", 429, `{"error_code":"REQUEST_LIMIT_EXCEEDED","message":"slow down"}`, forecast.EUNAVAILABLE},
		{"endpoint not found", 404, `{"error_code":"ENDPOINT_NOT_FOUND","message":"no such endpoint"}`, forecast.EUNAVAILABLE},
		{"404 page", 404, `<html>Not Found</html>`, forecast.EUNAVAILABLE},
		{"unknown 4xx code", 400, `{"error_code":"SOMETHING_NEW","message":"?"}`, forecast.EINVALID},
		{"409", 409, `{}`, forecast.ECONFLICT},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			_, c := serve(t, mlflowclient.Options{}, fixed(tc.status, tc.body))
			_, err := c.GetModel(context.Background(), "m")
			if got := forecast.ErrorCode(err); got != tc.want {
				t.Fatalf("error %v: code %q, want %q", err, got, tc.want)
			}
			var api *mlflowclient.APIError
			if !errors.As(err, &api) || api.Status != tc.status {
				t.Fatalf("error %v does not keep the HTTP status %d", err, tc.status)
			}
		})
	}
}

func TestServerMessageIsKept(t *testing.T) {
	t.Parallel()
	_, c := serve(t, mlflowclient.Options{}, fixed(404, `{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"Registered Model with name=x not found"}`))
	_, err := c.GetModel(context.Background(), "x")
	if got := forecast.ErrorMessage(err); !strings.Contains(got, "Registered Model with name=x not found") {
		t.Fatalf("message %q does not carry the server's", got)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	c, err := mlflowclient.New(addr, mlflowclient.Options{Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.GetModel(context.Background(), "m")
	if got := forecast.ErrorCode(err); got != forecast.EUNAVAILABLE {
		t.Fatalf("a closed port: %v (code %q), want EUNAVAILABLE", err, got)
	}
}

func TestAuthHeader(t *testing.T) {
	t.Parallel()
	model := `{"registered_model":{"name":"m"}}`
	for _, tc := range []struct {
		note, token, want string
	}{
		{"token", "s3cret", "Bearer s3cret"},
		{"no token", "", ""},
	} {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			f, c := serve(t, mlflowclient.Options{Token: tc.token}, fixed(200, model))
			if _, err := c.GetModel(context.Background(), "m"); err != nil {
				t.Fatal(err)
			}
			if err := c.SetModelTag(context.Background(), "m", registry.Tag{Key: "k", Value: "v"}); err != nil {
				t.Fatal(err)
			}
			for _, got := range f.calls {
				if got.Auth != tc.want {
					t.Fatalf("%s %s: Authorization %q, want %q", got.Method, got.Path, got.Auth, tc.want)
				}
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })

	t.Run("per call", func(t *testing.T) {
		c, err := mlflowclient.New(srv.URL, mlflowclient.Options{Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		_, err = c.GetModel(context.Background(), "m")
		if forecast.ErrorCode(err) != forecast.EUNAVAILABLE || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a slow server: %v, want EUNAVAILABLE with context.DeadlineExceeded", err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Fatalf("the call took %v with a 50ms timeout", d)
		}
	})
	t.Run("caller's deadline", func(t *testing.T) {
		c, err := mlflowclient.New(srv.URL, mlflowclient.Options{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := c.GetModel(ctx, "m"); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%v, want context.DeadlineExceeded in the chain", err)
		}
	})
	t.Run("canceled", func(t *testing.T) {
		c, err := mlflowclient.New(srv.URL, mlflowclient.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.GetModel(ctx, "m"); !errors.Is(err, context.Canceled) {
			t.Fatalf("%v, want context.Canceled in the chain", err)
		}
	})
}

// TestRequests checks the method, path and parameters of each call, as
// MLflow's RestStore sends them.
func TestRequests(t *testing.T) {
	t.Parallel()
	version := `{"model_version":{"name":"m","version":"3"}}`
	model := `{"registered_model":{"name":"m"}}`
	ctx := context.Background()
	cases := []struct {
		note   string
		answer string
		do     func(c *mlflowclient.Client) error
		method string
		path   string
		query  url.Values
		body   map[string]any
	}{
		{"CreateModel", model, func(c *mlflowclient.Client) error {
			_, err := c.CreateModel(ctx, "m", "d", []registry.Tag{{Key: "zone", Value: "DE"}})
			return err
		}, "POST", "registered-models/create", nil, map[string]any{"name": "m", "description": "d", "tags": []any{map[string]any{"key": "zone", "value": "DE"}}}},
		{"GetModel", model, func(c *mlflowclient.Client) error { _, err := c.GetModel(ctx, "a b&c"); return err },
			"GET", "registered-models/get", url.Values{"name": {"a b&c"}}, nil},
		{"RenameModel", model, func(c *mlflowclient.Client) error { _, err := c.RenameModel(ctx, "m", "n"); return err },
			"POST", "registered-models/rename", nil, map[string]any{"name": "m", "new_name": "n"}},
		{"UpdateModel", model, func(c *mlflowclient.Client) error { _, err := c.UpdateModel(ctx, "m", ""); return err },
			"PATCH", "registered-models/update", nil, map[string]any{"name": "m", "description": ""}},
		{"DeleteModel", `{}`, func(c *mlflowclient.Client) error { return c.DeleteModel(ctx, "m") },
			"DELETE", "registered-models/delete", nil, map[string]any{"name": "m"}},
		{"SetModelTag", `{}`, func(c *mlflowclient.Client) error { return c.SetModelTag(ctx, "m", registry.Tag{Key: "k", Value: ""}) },
			"POST", "registered-models/set-tag", nil, map[string]any{"name": "m", "key": "k", "value": ""}},
		{"DeleteModelTag", `{}`, func(c *mlflowclient.Client) error { return c.DeleteModelTag(ctx, "m", "k") },
			"DELETE", "registered-models/delete-tag", nil, map[string]any{"name": "m", "key": "k"}},
		{"SetAlias", `{}`, func(c *mlflowclient.Client) error { return c.SetAlias(ctx, "m", "champion", 3) },
			"POST", "registered-models/alias", nil, map[string]any{"name": "m", "alias": "champion", "version": "3"}},
		{"DeleteAlias", `{}`, func(c *mlflowclient.Client) error { return c.DeleteAlias(ctx, "m", "champion") },
			"DELETE", "registered-models/alias", nil, map[string]any{"name": "m", "alias": "champion"}},
		{"VersionByAlias", version, func(c *mlflowclient.Client) error { _, err := c.VersionByAlias(ctx, "m", "champion"); return err },
			"GET", "registered-models/alias", url.Values{"name": {"m"}, "alias": {"champion"}}, nil},
		{"CreateVersion", version, func(c *mlflowclient.Client) error {
			_, err := c.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b/m", RunID: "r", UserID: "ignored"})
			return err
		}, "POST", "model-versions/create", nil, map[string]any{"name": "m", "source": "s3://b/m", "run_id": "r"}},
		{"GetVersion", version, func(c *mlflowclient.Client) error { _, err := c.GetVersion(ctx, "m", 3); return err },
			"GET", "model-versions/get", url.Values{"name": {"m"}, "version": {"3"}}, nil},
		{"UpdateVersion", version, func(c *mlflowclient.Client) error { _, err := c.UpdateVersion(ctx, "m", 3, "d"); return err },
			"PATCH", "model-versions/update", nil, map[string]any{"name": "m", "version": "3", "description": "d"}},
		{"TransitionStage", version, func(c *mlflowclient.Client) error {
			_, err := c.TransitionStage(ctx, "m", 3, "production", true)
			return err
		}, "POST", "model-versions/transition-stage", nil, map[string]any{"name": "m", "version": "3", "stage": "Production", "archive_existing_versions": true}},
		{"DeleteVersion", `{}`, func(c *mlflowclient.Client) error { return c.DeleteVersion(ctx, "m", 3) },
			"DELETE", "model-versions/delete", nil, map[string]any{"name": "m", "version": "3"}},
		{"LatestVersions", `{}`, func(c *mlflowclient.Client) error {
			_, err := c.LatestVersions(ctx, "m", []string{"staging"})
			return err
		},
			"POST", "registered-models/get-latest-versions", nil, map[string]any{"name": "m", "stages": []any{"Staging"}}},
		{"SetVersionTag", `{}`, func(c *mlflowclient.Client) error {
			return c.SetVersionTag(ctx, "m", 3, registry.Tag{Key: "k", Value: "v"})
		},
			"POST", "model-versions/set-tag", nil, map[string]any{"name": "m", "version": "3", "key": "k", "value": "v"}},
		{"DeleteVersionTag", `{}`, func(c *mlflowclient.Client) error { return c.DeleteVersionTag(ctx, "m", 3, "k") },
			"DELETE", "model-versions/delete-tag", nil, map[string]any{"name": "m", "version": "3", "key": "k"}},
		{"SearchModels", `{}`, func(c *mlflowclient.Client) error {
			_, _, err := c.SearchModels(ctx, registry.Search{
				Filter:  []registry.Clause{{Key: "name", Op: "LIKE", Values: []string{"carbon-%"}}, {Key: "tags.zone", Op: "=", Values: []string{"DE"}}},
				OrderBy: []registry.Order{{Key: "last_updated_timestamp", Desc: true}, {Key: "name"}}, MaxResults: 50, Offset: 100,
			})
			return err
		}, "GET", "registered-models/search", url.Values{
			"filter": {"name LIKE 'carbon-%' AND tags.zone = 'DE'"}, "order_by": {"last_updated_timestamp DESC", "name ASC"},
			"max_results": {"50"}, "page_token": {"eyJvZmZzZXQiOiAxMDB9"},
		}, nil},
		{"SearchVersions", `{}`, func(c *mlflowclient.Client) error {
			_, _, err := c.SearchVersions(ctx, registry.Search{Filter: []registry.Clause{{Key: "version_number", Op: "=", Values: []string{"3"}}}})
			return err
		}, "GET", "model-versions/search", url.Values{"filter": {"version_number = 3"}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			f, c := serve(t, mlflowclient.Options{}, fixed(200, tc.answer))
			if err := tc.do(c); err != nil {
				t.Fatal(err)
			}
			got := f.last(t)
			if got.Method != tc.method || got.Path != "/api/2.0/mlflow/"+tc.path {
				t.Fatalf("%s %s, want %s /api/2.0/mlflow/%s", got.Method, got.Path, tc.method, tc.path)
			}
			if tc.query == nil {
				tc.query = url.Values{}
			}
			if !equalJSON(got.Query, tc.query) {
				t.Fatalf("query %v, want %v", got.Query, tc.query)
			}
			if !equalJSON(got.Body, tc.body) {
				t.Fatalf("body %v, want %v", got.Body, tc.body)
			}
		})
	}
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func TestDecode(t *testing.T) {
	t.Parallel()
	body := `{"registered_model":{"name":"m","creation_timestamp":"1700000000000","last_updated_timestamp":1700000001000,
		"description":"d","user_id":"u","tags":[{"key":"zone","value":"DE"},{"key":"horizon","value":"72"}],
		"aliases":[{"alias":"champion","version":"3"},{"alias":"canary","version":"4"}],
		"latest_versions":[{"name":"m","version":"4"}]}}`
	_, c := serve(t, mlflowclient.Options{}, fixed(200, body))
	got, err := c.GetModel(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	want := registry.RegisteredModel{
		Name: "m", CreationTime: 1700000000000, LastUpdatedTime: 1700000001000, Description: "d",
		Tags:    []registry.Tag{{Key: "horizon", Value: "72"}, {Key: "zone", Value: "DE"}},
		Aliases: []registry.Alias{{Alias: "canary", Version: 4}, {Alias: "champion", Version: 3}},
	}
	if !equalJSON(got, want) {
		t.Fatalf("GetModel =\n %+v\nwant\n %+v", got, want)
	}

	body = `{"model_version":{"name":"m","version":"3","creation_timestamp":1,"last_updated_timestamp":2,"user_id":"alice",
		"current_stage":"Production","description":"d","source":"mlflow-artifacts:/m/3","run_id":"r","status":"READY",
		"status_message":"","run_link":"http://x","tags":[{"key":"b","value":"2"},{"key":"a","value":"1"}],"aliases":["z","a"]}}`
	_, c = serve(t, mlflowclient.Options{}, fixed(200, body))
	v, err := c.GetVersion(context.Background(), "m", 3)
	if err != nil {
		t.Fatal(err)
	}
	wantV := registry.ModelVersion{
		Name: "m", Version: 3, CreationTime: 1, LastUpdatedTime: 2, Description: "d", UserID: "alice",
		CurrentStage: "Production", Source: "mlflow-artifacts:/m/3", RunID: "r", RunLink: "http://x", Status: "READY",
		Tags: []registry.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}, Aliases: []string{"a", "z"},
	}
	if !equalJSON(v, wantV) {
		t.Fatalf("GetVersion =\n %+v\nwant\n %+v", v, wantV)
	}

	for _, bad := range []string{`{}`, `{"model_version":{"name":"m","version":"x"}}`, `not json`} {
		_, c = serve(t, mlflowclient.Options{}, fixed(200, bad))
		if _, err := c.GetVersion(context.Background(), "m", 3); forecast.ErrorCode(err) != forecast.EUNAVAILABLE {
			t.Fatalf("answer %s: %v, want EUNAVAILABLE", bad, err)
		}
	}
}

func TestVersionByAliasMissing(t *testing.T) {
	t.Parallel()
	// MLflow answers a missing alias with INVALID_PARAMETER_VALUE.
	_, c := serve(t, mlflowclient.Options{}, fixed(400, `{"error_code":"INVALID_PARAMETER_VALUE","message":"Registered model alias x not found."}`))
	_, err := c.VersionByAlias(context.Background(), "m", "x")
	if got := forecast.ErrorCode(err); got != forecast.ENOTFOUND {
		t.Fatalf("%v: code %q, want ENOTFOUND", err, got)
	}
}

func TestLatestVersionsOrder(t *testing.T) {
	t.Parallel()
	body := `{"model_versions":[{"name":"m","version":"3","current_stage":"Production"},{"name":"m","version":"2","current_stage":"Staging"},
		{"name":"m","version":"6","current_stage":"Archived"},{"name":"m","version":"4","current_stage":"None"}]}`
	_, c := serve(t, mlflowclient.Options{}, fixed(200, body))
	for _, tc := range []struct {
		stages []string
		want   []int64
	}{
		{nil, []int64{4, 2, 3, 6}},
		{[]string{"archived", "production", "none", "staging"}, []int64{6, 3, 4, 2}},
	} {
		vs, err := c.LatestVersions(context.Background(), "m", tc.stages)
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, v := range vs {
			got = append(got, v.Version)
		}
		if !slices.Equal(got, tc.want) {
			t.Fatalf("LatestVersions(%v) = %v, want %v", tc.stages, got, tc.want)
		}
	}
}

func TestAliasTargetsPages(t *testing.T) {
	t.Parallel()
	f, c := serve(t, mlflowclient.Options{}, func(c call) (int, string) {
		if c.Query.Get("page_token") == "" {
			return 200, `{"registered_models":[{"name":"b","aliases":[{"alias":"prod","version":"2"},{"alias":"canary","version":"1"}]},{"name":"c"}],"next_page_token":"p2"}`
		}
		return 200, `{"registered_models":[{"name":"a","aliases":[{"alias":"champion","version":"7"}]}]}`
	})
	got, err := c.AliasTargets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []registry.AliasTarget{{Name: "a", Alias: "champion", Version: 7}, {Name: "b", Alias: "canary", Version: 1}, {Name: "b", Alias: "prod", Version: 2}}
	if !slices.Equal(got, want) {
		t.Fatalf("AliasTargets = %v, want %v", got, want)
	}
	if n := len(f.calls); n != 2 {
		t.Fatalf("%d calls, want 2 pages", n)
	}
	if got := f.calls[0].Query.Get("max_results"); got != "1000" {
		t.Fatalf("max_results %q, want 1000", got)
	}
}

// TestValidatesFirst checks that input MLflow would refuse is EINVALID
// with the field named, and no call is made.
func TestValidatesFirst(t *testing.T) {
	t.Parallel()
	f, c := serve(t, mlflowclient.Options{}, fixed(500, `{}`))
	ctx := context.Background()
	cases := []struct {
		note  string
		field string
		err   error
	}{
		{"name", "name", func() error { _, err := c.CreateModel(ctx, "a/b", "", nil); return err }()},
		{"new name", "new_name", func() error { _, err := c.RenameModel(ctx, "a", ""); return err }()},
		{"tag", "key", c.SetModelTag(ctx, "m", registry.Tag{Key: ""})},
		{"alias", "alias", c.SetAlias(ctx, "m", "v1", 1)},
		{"stage", "stage", func() error { _, err := c.TransitionStage(ctx, "m", 1, "prod", false); return err }()},
		{"archive to None", "archive_existing_versions", func() error { _, err := c.TransitionStage(ctx, "m", 1, "None", true); return err }()},
		{"status", "status", func() error {
			_, err := c.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b/m", Status: registry.StatusPending})
			return err
		}()},
		{"version", "version", func() error { _, err := c.GetVersion(ctx, "m", 0); return err }()},
		{"filter", "filter", func() error {
			_, _, err := c.SearchModels(ctx, registry.Search{Filter: []registry.Clause{{Key: "name", Op: "=", Values: []string{`a'"b`}}}})
			return err
		}()},
	}
	for _, tc := range cases {
		if forecast.ErrorCode(tc.err) != forecast.EINVALID || forecast.ErrorField(tc.err) != tc.field {
			t.Errorf("%s: %v, want EINVALID naming %q", tc.note, tc.err, tc.field)
		}
	}
	if len(f.calls) != 0 {
		t.Fatalf("%d calls made for invalid input", len(f.calls))
	}
}

// TestBasicAuthFromURL: credentials in the URL are sent as basic auth
// (MLflow's MLFLOW_TRACKING_USERNAME/PASSWORD) and kept out of URL().
func TestBasicAuthFromURL(t *testing.T) {
	t.Parallel()
	f := &fake{answer: fixed(200, `{"registered_model":{"name":"m"}}`)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := mlflowclient.New(strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1), mlflowclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetModel(context.Background(), "m"); err != nil {
		t.Fatal(err)
	}
	if got, want := f.last(t).Auth, "Basic YWxpY2U6czNjcmV0"; got != want {
		t.Fatalf("Authorization %q, want %q", got, want)
	}
	if strings.Contains(c.URL(), "s3cret") {
		t.Fatalf("URL() = %q shows the password", c.URL())
	}
}
