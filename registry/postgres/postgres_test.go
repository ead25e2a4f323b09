//go:build interop

package postgres_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/postgres"
	"github.com/carbongate/carbongate/registry/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// TestMain fails the package when a watcher or pool goroutine outlives the
// tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines leaked:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func leakedGoroutines(wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		buf := make([]byte, 1<<20)
		stacks := strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n")
		var leaked []string
		for _, s := range stacks {
			if strings.Contains(s, "registry/postgres.") || strings.Contains(s, "jackc/puddle") {
				leaked = append(leaked, s)
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// open opens a Store on url and closes it in cleanup.
func open(t *testing.T, url string, o registry.Options) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(testCtx(t), url, o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func migrate(t *testing.T, url string) {
	t.Helper()
	if err := postgres.Migrate(testCtx(t), url); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
}

// migrated returns the URL of a fresh database prepared by Migrate.
func migrated(t *testing.T) string {
	t.Helper()
	url := services.StartPostgres(t).Database(t)
	migrate(t, url)
	return url
}

// connect opens a connection to url, closed in cleanup.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(testCtx(t), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// sql runs statements on url as the superuser.
func sql(t *testing.T, url string, stmts ...string) {
	t.Helper()
	ctx := testCtx(t)
	c := connect(t, url)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// queryStrings returns the first column of every row of query on url.
func queryStrings(t *testing.T, url, query string, args ...any) []string {
	t.Helper()
	ctx := testCtx(t)
	rows, err := connect(t, url).Query(ctx, query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := forecast.ErrorCode(err); got != code {
		t.Fatalf("%s: %v (code %q), want %q", what, err, got, code)
	}
}

// TestStore runs the conformance suite on the layout Migrate creates
// (MLflow 2.8 to 3.9), with its fault cases.
func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		s, err := postgres.Open(testCtx(t), migrated(t), o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, storetest.Options{
		Except: map[string]string{"TagLimits": "a row per tag, as in MLflow's own SQL stores, which have no cap on the tags of a model or version: not enforced here either"},
		Unmigrated: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return postgres.Open(testCtx(t), services.StartPostgres(t).Database(t), o)
		},
		Unreachable: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return postgres.Open(testCtx(t), "postgres://carbongate@127.0.0.1:1/registry?connect_timeout=5", o)
		},
		Unauthorized: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return postgres.Open(testCtx(t), services.WithUser(t, migrated(t), "nobody"), o)
		},
	})
}

// TestStoreWorkspace runs the conformance suite on MLflow 3.10's layout
// (workspace in every key).
func TestStoreWorkspace(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		url := migrated(t)
		sql(t, url, workspaceMigration...)
		s, err := postgres.Open(testCtx(t), url, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, storetest.Options{Except: map[string]string{"TagLimits": "a row per tag, as in MLflow's own SQL stores, which have no cap on the tags of a model or version: not enforced here either"}})
}
