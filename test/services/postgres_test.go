//go:build interop

package services_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/test/services"
)

func pgConnect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func pgQueryString(t *testing.T, c *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var s string
	if err := c.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// TestPostgresShared: one server per test binary, a fresh database per
// call, the test settings applied, the unix socket served, and each
// database dropped when its test ends.
func TestPostgresShared(t *testing.T) {
	t.Parallel()
	pg := services.StartPostgres(t)
	if again := services.StartPostgres(t); again != pg {
		t.Fatalf("StartPostgres started a second server")
	}
	var dbName string
	t.Run("database", func(t *testing.T) {
		a, b := pg.Database(t), pg.Database(t)
		if a == b {
			t.Fatalf("Database returned %s twice", a)
		}
		if !strings.HasPrefix(a, fmt.Sprintf("postgres://carbongate@127.0.0.1:%d/", pg.Port)) || !strings.HasSuffix(a, "?sslmode=disable") {
			t.Fatalf("URL=%s", a)
		}
		ca, cb := pgConnect(t, a), pgConnect(t, b)
		ctx := context.Background()
		if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
			t.Fatal(err)
		}
		if got := pgQueryString(t, cb, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "0" {
			t.Fatalf("table of database a visible in b: count=%s", got)
		}
		dbName = pgQueryString(t, ca, "SELECT current_database()")
		for setting, want := range map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"} {
			if got := pgQueryString(t, ca, "SELECT current_setting($1)", setting); got != want {
				t.Errorf("%s=%s, want %s", setting, got, want)
			}
		}
		sock := pgConnect(t, fmt.Sprintf("postgres:///%s?host=%s&port=%d&user=carbongate", dbName, pg.SocketDir, pg.Port))
		if got := pgQueryString(t, sock, "SELECT current_database()"); got != dbName {
			t.Fatalf("over the socket: current_database=%s, want %s", got, dbName)
		}
	})
	admin := pgConnect(t, pg.URL("postgres"))
	if got := pgQueryString(t, admin, "SELECT count(*)::text FROM pg_database WHERE datname = $1", dbName); got != "0" {
		t.Fatalf("database %s still exists after its test ended", dbName)
	}
	if pg.Version == "" {
		t.Fatalf("Version not set")
	}
}

// TestPostgresPrivateRestart: a private server can be stopped (clients
// are refused) and started again on the same port with its data intact.
func TestPostgresPrivateRestart(t *testing.T) {
	t.Parallel()
	pg := services.StartPrivatePostgres(t)
	if pg == services.StartPostgres(t) {
		t.Fatalf("StartPrivatePostgres returned the shared server")
	}
	url := pg.Database(t)
	ctx := context.Background()
	c := pgConnect(t, url)
	if _, err := c.Exec(ctx, "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	port := pg.Port

	pg.Stop(t)
	if pg.Running() {
		t.Fatalf("Running after Stop")
	}
	if _, err := c.Exec(ctx, "SELECT 1"); err == nil {
		t.Fatalf("query on a stopped server succeeded")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if c2, err := pgx.Connect(cctx, url); err == nil {
		c2.Close(ctx)
		t.Fatalf("connected to a stopped server")
	}

	pg.Start(t)
	if !pg.Running() || pg.Port != port {
		t.Fatalf("after Start: running=%v port=%d, want true %d", pg.Running(), pg.Port, port)
	}
	if got := pgQueryString(t, pgConnect(t, url), "SELECT x::text FROM kept"); got != "42" {
		t.Fatalf("after restart: x=%s, want 42", got)
	}
	pg.Restart(t)
	if got := pgQueryString(t, pgConnect(t, url), "SELECT x::text FROM kept"); got != "42" {
		t.Fatalf("after Restart: x=%s, want 42", got)
	}

	// The port stays held while the server is down, so only a process
	// that binds that very port can take it: then Start fails at once,
	// naming it, and succeeds once it has let go.
	pg.Stop(t)
	thief, err := net.Listen("tcp", net.JoinHostPort(pg.Host, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the stopped server's port: %v", err)
	}
	ftb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); pg.Start(ftb) }()
	<-done
	thief.Close()
	if want := fmt.Sprintf("pid %d (", os.Getpid()); !strings.Contains(ftb.msg, "taken by another process") || !strings.Contains(ftb.msg, want) {
		t.Fatalf("Start on a taken port: %q, want it to say the port was taken by %s…)", ftb.msg, want)
	}
	pg.Start(t)
	if got := pgQueryString(t, pgConnect(t, url), "SELECT x::text FROM kept"); got != "42" {
		t.Fatalf("after the port came back: x=%s, want 42", got)
	}
}

// fatalTB records Fatalf instead of failing the real test.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestPGBinDirMissing: without server binaries the test fails (never
// skips) and says how to get them.
func TestPGBinDirMissing(t *testing.T) {
	t.Setenv(services.PGBinEnv, t.TempDir())
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		services.PGBinDir(f)
	}()
	<-done
	if !strings.Contains(f.msg, "test/setup/postgres.sh") {
		t.Fatalf("PGBinDir with an empty %s: %q, want a failure naming test/setup/postgres.sh", services.PGBinEnv, f.msg)
	}
}
