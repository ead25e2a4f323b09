//go:build interop

package services_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/test/services"
)

// TestCrateDBShared: one server per test binary, not running as root, a
// fresh schema per call, and each schema's tables dropped when its test
// ends (a node holds at most 1,000 shards).
func TestCrateDBShared(t *testing.T) {
	t.Parallel()
	crate := services.StartCrateDB(t)
	if again := services.StartCrateDB(t); again != crate {
		t.Fatalf("StartCrateDB started a second server")
	}
	if !strings.HasPrefix(crate.Version, "CrateDB ") {
		t.Fatalf("Version=%q", crate.Version)
	}
	t.Logf("%s started in %v", crate.Version, crate.StartTime)
	ctx := context.Background()
	admin := pgConnect(t, crate.URL("doc"))
	var schema string
	t.Run("schema", func(t *testing.T) {
		a, b := crate.Schema(t), crate.Schema(t)
		if a == b {
			t.Fatalf("Schema returned %s twice", a)
		}
		schema = a[strings.LastIndex(a, "/")+1 : strings.Index(a, "?")]
		c := pgConnect(t, a)
		for _, sql := range []string{
			`CREATE TABLE t (id INT PRIMARY KEY) CLUSTERED INTO 1 SHARDS`,
			`INSERT INTO t (id) VALUES (1)`,
			`REFRESH TABLE t`,
		} {
			if _, err := c.Exec(ctx, sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		if got := pgQueryString(t, admin, `SELECT count(*)::TEXT FROM information_schema.tables WHERE table_schema = $1`, schema); got != "1" {
			t.Fatalf("%s holds %s tables, want 1 (the database name is the schema)", schema, got)
		}
	})
	if got := pgQueryString(t, admin, `SELECT count(*)::TEXT FROM information_schema.tables WHERE table_schema = $1`, schema); got != "0" {
		t.Fatalf("%s still holds %s tables after its test", schema, got)
	}
	if os.Geteuid() == 0 {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(crate.Pid()) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == "0" {
				t.Fatalf("CrateDB runs as root: %s", line)
			}
		}
	}
}

// TestCrateDBPrivateRestart: a private server can be stopped (clients are
// refused) and started again on the same ports with its rows, every table
// green when Start returns.
func TestCrateDBPrivateRestart(t *testing.T) {
	crate := services.StartPrivateCrateDB(t)
	if crate == services.StartCrateDB(t) {
		t.Fatalf("StartPrivateCrateDB returned the shared server")
	}
	url := crate.Schema(t)
	ctx := context.Background()
	c := pgConnect(t, url)
	for _, sql := range []string{"CREATE TABLE kept (x int)", "INSERT INTO kept VALUES (42)", "REFRESH TABLE kept"} {
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	psql, http := crate.PSQLPort, crate.HTTPPort

	crate.Stop(t)
	if crate.Running() {
		t.Fatalf("Running after Stop")
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatalf("query on a stopped server succeeded")
	}

	crate.Start(t)
	if !crate.Running() || crate.PSQLPort != psql || crate.HTTPPort != http {
		t.Fatalf("after Start: running=%v ports %d/%d, want true %d/%d", crate.Running(), crate.PSQLPort, crate.HTTPPort, psql, http)
	}
	// No retry: Start waited for the table's shards.
	if got := pgQueryString(t, pgConnect(t, url), "SELECT x::text FROM kept"); got != "42" {
		t.Fatalf("after restart: x=%s, want 42", got)
	}
}
