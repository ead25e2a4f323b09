//go:build interop

package postgres_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/postgres"
	"github.com/carbongate/carbongate/test/services"
)

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	pg := services.StartPostgres(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	tests := []struct {
		note, url, code string
	}{
		{"empty", "", forecast.EINVALID},
		{"malformed", "postgres://user:secret@[::1:5432/db", forecast.EINVALID},
		{"unknown parameter value", "postgres://127.0.0.1/db?sslmode=sometimes", forecast.EINVALID},
		{"nothing listening", fmt.Sprintf("postgres://carbongate@127.0.0.1:%d/db?sslmode=disable", closedPort), forecast.EUNAVAILABLE},
		{"no such database", pg.URL("does_not_exist"), forecast.ENOTFOUND},
	}
	for _, tc := range tests {
		t.Run(tc.note, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			s, err := postgres.Open(testCtx(t), tc.url, registry.Options{})
			if err == nil {
				s.Close()
			}
			wantCode(t, "Open", err, tc.code)
			if strings.Contains(err.Error(), "secret") {
				t.Fatalf("error shows the password: %v", err)
			}
			if d := time.Since(start); d > postgres.ConnectTimeout+time.Second {
				t.Fatalf("Open took %v", d)
			}
		})
	}
	// A server that accepts TCP but never answers: the connect timeout.
	hang, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = postgres.Open(ctx, "postgres://x@"+hang.Addr().String()+"/db?sslmode=disable", registry.Options{})
	wantCode(t, "Open on a silent server", err, forecast.EUNAVAILABLE)
	if ctx.Err() == nil {
		t.Fatalf("Open on a silent server returned before the deadline: %v", err)
	}
}

// TestCreateVersionConcurrent: 50 concurrent creates get 1..50; numbers of
// soft-deleted versions are never reused.
func TestCreateVersionConcurrent(t *testing.T) {
	t.Parallel()
	s := open(t, migrated(t), registry.Options{})
	ctx := testCtx(t)
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	const n = 50
	got := make([]int64, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			v, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b/m/" + strconv.Itoa(i)})
			if err != nil {
				errs <- err
			}
			got[i] = v.Version
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("CreateVersion: %v", err)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("versions %v, want 1..%d", got, n)
		}
	}
	if err := s.DeleteVersion(ctx, "m", n); err != nil {
		t.Fatal(err)
	}
	if v, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b"}); err != nil || v.Version != n+1 {
		t.Fatalf("after deleting %d: CreateVersion = %d, %v; want %d", n, v.Version, err, n+1)
	}
}

// TestCreateVersionRetry: a unique violation on the version row (another
// writer took the number) is retried; after CreateAttempts it is ECONFLICT
// and nothing was written. The conflicts come from a test trigger counting
// on a sequence, which no rollback resets.
func TestCreateVersionRetry(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	sql(t, url, `CREATE SEQUENCE conflicts`, `
CREATE FUNCTION fake_conflict() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('conflicts') <= 2 OR NEW.name = 'always' THEN
		RAISE unique_violation USING MESSAGE = 'duplicate key value violates unique constraint "model_version_pk"';
	END IF;
	RETURN NEW;
END $$`,
		`CREATE TRIGGER fake_conflict BEFORE INSERT ON model_versions FOR EACH ROW EXECUTE FUNCTION fake_conflict()`)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	for _, name := range []string{"m", "always"} {
		if _, err := s.CreateModel(ctx, name, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	v, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b", Tags: []registry.Tag{{Key: "k", Value: "v"}}})
	if err != nil || v.Version != 1 || len(v.Tags) != 1 {
		t.Fatalf("CreateVersion after two conflicts = %+v, %v; want version 1 with its tag", v, err)
	}
	_, err = s.CreateVersion(ctx, registry.NewVersion{Name: "always", Source: "s3://b"})
	wantCode(t, "CreateVersion under endless conflicts", err, forecast.ECONFLICT)
	if got := queryStrings(t, url, `SELECT name || '/' || version FROM model_versions ORDER BY 1`); !slices.Equal(got, []string{"m/1"}) {
		t.Fatalf("model_versions = %q", got)
	}
}

// TestFilterInjection: values and tag keys made of SQL reach the server
// as parameters: they match literally and run nothing.
func TestFilterInjection(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	attacks := []string{
		`x' OR '1'='1`,
		`'; DROP TABLE registered_models; --`,
		`m") OR TRUE --`,
		`$1`,
		`\' OR 1=1 --`,
		`%' OR name LIKE '%`,
	}
	for i, a := range attacks {
		name := "model-" + strconv.Itoa(i) + "-" + a
		if _, err := s.CreateModel(ctx, name, "", []registry.Tag{{Key: a, Value: a}}); err != nil {
			t.Fatalf("CreateModel(%q): %v", name, err)
		}
	}
	for i, a := range attacks {
		none := [][]registry.Clause{
			{{Key: "name", Op: "=", Values: []string{a}}},
			{{Key: "tags." + a, Op: "!=", Values: []string{a}}},
			{{Key: "tags.zone", Op: "=", Values: []string{a}}},
		}
		if !strings.ContainsAny(a, "%_") { // else a real pattern that may match
			none = append(none, []registry.Clause{{Key: "name", Op: "ILIKE", Values: []string{a}}})
		}
		for _, f := range none {
			page, _, err := s.SearchModels(ctx, registry.Search{Filter: f, MaxResults: 100})
			if err != nil || len(page) != 0 {
				t.Fatalf("SearchModels(%+v) = %d models, %v; want none", f, len(page), err)
			}
		}
		want := "model-" + strconv.Itoa(i) + "-" + a
		for _, f := range [][]registry.Clause{
			{{Key: "name", Op: "=", Values: []string{want}}},
			{{Key: "tags." + a, Op: "=", Values: []string{a}}},
		} {
			page, _, err := s.SearchModels(ctx, registry.Search{Filter: f, MaxResults: 100})
			if err != nil || len(page) != 1 || page[0].Name != want {
				t.Fatalf("SearchModels(%+v) = %+v, %v; want exactly %q", f, page, err, want)
			}
		}
		page, _, err := s.SearchVersions(ctx, registry.Search{MaxResults: 10, Filter: []registry.Clause{{Key: "run_id", Op: "IN", Values: []string{a, "x"}}}})
		if err != nil || len(page) != 0 {
			t.Fatalf("SearchVersions(run_id IN %q) = %+v, %v", a, page, err)
		}
	}
	if got := queryStrings(t, url, `SELECT count(*)::text FROM registered_models`); !slices.Equal(got, []string{strconv.Itoa(len(attacks))}) {
		t.Fatalf("registered_models count = %q", got)
	}
}

// TestDeleteVersionAsMLflow: the row stays, redacted as MLflow redacts it;
// its aliases go, its tags stay (MLflow keeps them), and the model's
// last_updated_time moves.
func TestDeleteVersionAsMLflow(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	now := time.UnixMilli(1_000_000)
	s := open(t, url, registry.Options{Now: func() time.Time { return now }})
	ctx := testCtx(t)
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b/m", RunID: "abc", RunLink: "http://run",
			Description: "d", UserID: "u", Tags: []registry.Tag{{Key: "zone", Value: "DE"}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, a := range []string{"champion", "old"} {
		if err := s.SetAlias(ctx, "m", a, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetAlias(ctx, "m", "challenger", 2); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if err := s.DeleteVersion(ctx, "m", 1); err != nil {
		t.Fatal(err)
	}
	row := queryStrings(t, url, `SELECT concat_ws('|', current_stage, last_updated_time, description, user_id, source, run_id, run_link, status_message, status)
FROM model_versions WHERE name = 'm' AND version = 1`)
	if want := "Deleted_Internal|1001000|REDACTED-SOURCE-PATH|REDACTED-RUN-ID|REDACTED-RUN-LINK|READY"; !slices.Equal(row, []string{want}) {
		t.Fatalf("deleted row = %q, want %q", row, want)
	}
	if got := queryStrings(t, url, `SELECT alias || '/' || version FROM registered_model_aliases ORDER BY 1`); !slices.Equal(got, []string{"challenger/2"}) {
		t.Fatalf("aliases = %q", got)
	}
	if got := queryStrings(t, url, `SELECT version || '/' || key FROM model_version_tags ORDER BY 1`); !slices.Equal(got, []string{"1/zone", "2/zone"}) {
		t.Fatalf("version tags = %q", got)
	}
	if m, err := s.GetModel(ctx, "m"); err != nil || m.LastUpdatedTime != 1_001_000 {
		t.Fatalf("model after delete = %+v, %v", m, err)
	}
	wantCode(t, "DeleteVersion twice", s.DeleteVersion(ctx, "m", 1), forecast.ENOTFOUND)
	wantCode(t, "SetVersionTag on a deleted version", s.SetVersionTag(ctx, "m", 1, registry.Tag{Key: "k"}), forecast.ENOTFOUND)
	wantCode(t, "DeleteVersionTag on a deleted version", s.DeleteVersionTag(ctx, "m", 1, "zone"), forecast.ENOTFOUND)
}

// TestRenameCascades: rename carries versions, tags (model and version)
// and aliases through ON UPDATE CASCADE and leaves nothing under the old
// name.
func TestRenameCascades(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	if _, err := s.CreateModel(ctx, "old", "", []registry.Tag{{Key: "zone", Value: "DE"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "old", Source: "s3://b", Tags: []registry.Tag{{Key: "k", Value: "v"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlias(ctx, "old", "champion", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RenameModel(ctx, "old", "new"); err != nil {
		t.Fatal(err)
	}
	got := queryStrings(t, url, `
SELECT 'model ' || name FROM registered_models
UNION ALL SELECT 'version ' || name || '/' || version FROM model_versions
UNION ALL SELECT 'model tag ' || name || '/' || key FROM registered_model_tags
UNION ALL SELECT 'version tag ' || name || '/' || version || '/' || key FROM model_version_tags
UNION ALL SELECT 'alias ' || name || '/' || alias FROM registered_model_aliases ORDER BY 1`)
	want := []string{"alias new/champion", "model new", "model tag new/zone", "version new/1", "version tag new/1/k"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows after rename = %q, want %q", got, want)
	}
}

// TestColumnLimits: a value longer than MLflow's column is EINVALID and
// writes nothing.
func TestColumnLimits(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://" + strings.Repeat("x", 600)})
	wantCode(t, "CreateVersion with a 606-byte source", err, forecast.EINVALID)
	_, err = s.UpdateModel(ctx, "m", strings.Repeat("d", 5001))
	wantCode(t, "UpdateModel with a 5001-byte description", err, forecast.EINVALID)
	if got := queryStrings(t, url, `SELECT count(*)::text FROM model_versions`); !slices.Equal(got, []string{"0"}) {
		t.Fatalf("model_versions count = %q", got)
	}
}
