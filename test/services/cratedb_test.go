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
