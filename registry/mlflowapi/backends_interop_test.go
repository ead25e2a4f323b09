//go:build interop

package mlflowapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/registry/lazy"
	"github.com/carbongate/carbongate/registry/mlflowapi"
	"github.com/carbongate/carbongate/test/services"
)

// TestFaultsAlikeOnEveryBackend: a fault of the database answers the same
// HTTP status and MLflow error_code whichever backend holds the registry,
// through carbongate's own wiring (connect.Open behind a lazy.Store):
// tables never created, tables gone after the store opened (CrateDB
// answered 404 RESOURCE_DOES_NOT_EXIST there, PostgreSQL 503), the server
// unreachable. The positive control: once migrated, the same requests
// answer 404 for the model that is not there, then 200, on both.
func TestFaultsAlikeOnEveryBackend(t *testing.T) {
	t.Parallel()
	pg := services.StartPostgres(t)
	crate := services.StartCrateDB(t)
	crateURI := func(tb testing.TB) string { return "crate://" + strings.TrimPrefix(crate.Schema(tb), "postgres://") }
	p := mlflowapi.PrefixAPI
	// healthy is each request's status once migrated, in this order.
	requests := []struct {
		method, path, body string
		healthy            int
	}{
		{"GET", p + "/registered-models/get?name=m", "", http.StatusNotFound},
		{"POST", p + "/registered-models/create", `{"name": "m"}`, http.StatusOK},
		{"GET", p + "/model-versions/search?filter=name%3D%27m%27", "", http.StatusOK},
		{"POST", p + "/model-versions/create", `{"name": "m", "source": "s3://b/1"}`, http.StatusOK},
	}
	for _, tc := range []struct {
		backend, fault string
		uri            func(tb testing.TB) string
		migrate        bool // the positive control: no fault
		drop           bool // migrate, open, then drop the tables
	}{
		{backend: "postgres", fault: "never migrated", uri: pg.Database},
		{backend: "cratedb", fault: "never migrated", uri: crateURI},
		{backend: "postgres", fault: "unreachable", uri: func(testing.TB) string {
			return "postgres://carbongate@127.0.0.1:1/registry?connect_timeout=5"
		}},
		{backend: "cratedb", fault: "unreachable", uri: func(testing.TB) string { return "crate://crate@127.0.0.1:1/doc?connect_timeout=5" }},
		{backend: "postgres", fault: "tables dropped after open", uri: pg.Database, drop: true},
		{backend: "cratedb", fault: "tables dropped after open", uri: crateURI, drop: true},
		{backend: "postgres", fault: "none (migrated)", uri: pg.Database, migrate: true},
		{backend: "cratedb", fault: "none (migrated)", uri: crateURI, migrate: true},
	} {
		t.Run(tc.backend+"/"+tc.fault, func(t *testing.T) {
			t.Parallel()
			uri := tc.uri(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if tc.migrate || tc.drop {
				if _, err := connect.Migrate(ctx, uri); err != nil {
					t.Fatalf("Migrate: %v", err)
				}
			}
			s := lazy.New(func(ctx context.Context) (registry.Store, error) {
				s, _, err := connect.Open(ctx, uri, registry.Options{})
				return s, err
			}, time.Minute, slog.New(slog.NewTextHandler(io.Discard, nil)))
			t.Cleanup(func() { _ = s.Close() })
			if tc.drop {
				if !s.Connected() {
					t.Fatal("the store did not open on the migrated database")
				}
				dropTables(t, ctx, uri)
			}
			e := newEnv(t, mlflowapi.Config{Token: testToken}, func(registry.Store) registry.Store { return s })
			for _, r := range requests {
				want, code := http.StatusServiceUnavailable, "TEMPORARILY_UNAVAILABLE"
				if tc.migrate {
					want, code = r.healthy, ""
					if want == http.StatusNotFound {
						code = "RESOURCE_DOES_NOT_EXIST"
					}
				}
				got := e.do(r.method, r.path, r.body)
				if got.status != want || (code != "" && got.errorCode(t) != code) {
					t.Fatalf("%s %s: %d %s, want %d %s", r.method, r.path, got.status, got.body, want, code)
				}
			}
		})
	}
}

// dropTables drops the registry's tables in the database uri names.
func dropTables(t *testing.T, ctx context.Context, uri string) {
	t.Helper()
	_, addr, err := connect.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, table := range []string{"registered_model_aliases", "model_version_tags", "registered_model_tags", "model_versions", "registered_models"} {
		if _, err := conn.Exec(ctx, "DROP TABLE "+table); err != nil {
			t.Fatalf("DROP TABLE %s: %v", table, err)
		}
	}
}
