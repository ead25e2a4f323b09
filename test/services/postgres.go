package services

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGBinEnv names the environment variable holding the directory of the
// PostgreSQL server binaries (postgres, initdb); test/setup/postgres.sh
// prints it.
const PGBinEnv = "CARBONGATE_PG_BIN"

// pgSuperuser is the superuser initdb creates; every database URL logs in as
// it (trust authentication, loopback only).
const pgSuperuser = "carbongate"

// Postgres is a PostgreSQL server running from a temp dir: listening on
// 127.0.0.1 on a free port and on a unix socket, with trust authentication
// and durability turned off (fsync, synchronous_commit, full_page_writes)
// because test data is thrown away.
type Postgres struct {
	// Host and Port are the TCP address; SocketDir holds the unix socket.
	Host      string
	Port      int
	SocketDir string
	// Version is the server's version, e.g. "15.18".
	Version string

	shared bool
	bin    string
	cred   *syscall.Credential // the postgres OS user when running as root

	server     // the current process
	runs   int // under mu
	dbSeq  int // under mu
}

// sharedPG is the one server per test binary that StartPostgres hands out.
var sharedPG shared[*Postgres]

// StartPostgres returns the test binary's PostgreSQL server, starting it on
// first use; every test of the binary shares it (give each its own database
// with Database). The server dies with the test binary; its run dir is
// removed by the next start on this machine. It cannot be stopped: fault
// tests use StartPrivatePostgres. Without PostgreSQL binaries the test
// fails with a hint to run test/setup/postgres.sh.
func StartPostgres(tb testing.TB) *Postgres {
	tb.Helper()
	bin := PGBinDir(tb)
	return sharedPG.get(tb, "PostgreSQL", func() (*Postgres, error) { return startPostgres(bin, true) })
}

// StartPrivatePostgres starts a PostgreSQL server of tb's own, which tb may
// Stop, Start and Restart; it is stopped and its files removed in
// tb.Cleanup.
func StartPrivatePostgres(tb testing.TB) *Postgres {
	tb.Helper()
	pg, err := startPostgres(PGBinDir(tb), false)
	if err != nil {
		tb.Fatalf("services: start PostgreSQL: %v", err)
	}
	pg.server.private(tb, "PostgreSQL")
	return pg
}

// PGBinDir returns the directory holding postgres and initdb: $PGBinEnv
// when set, else the newest /usr/lib/postgresql/<major>/bin. It fails the
// test when there is none.
func PGBinDir(tb testing.TB) string {
	tb.Helper()
	hint := "run test/setup/postgres.sh (it installs PostgreSQL if needed) and set " + PGBinEnv + " to the directory it prints"
	if d := os.Getenv(PGBinEnv); d != "" {
		if !hasPGServer(d) {
			tb.Fatalf("services: %s=%s holds no postgres and initdb; %s", PGBinEnv, d, hint)
		}
		return d
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, d := range dirs {
		if hasPGServer(d) {
			return d
		}
	}
	tb.Fatalf("services: no PostgreSQL server binaries (postgres, initdb) found; %s", hint)
	return ""
}

func hasPGServer(dir string) bool {
	for _, name := range []string{"postgres", "initdb"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// pgRoot is the parent of every run dir; stale ones are swept on start.
func pgRoot() string { return filepath.Join(os.TempDir(), "carbongate-pg") }

func startPostgres(bin string, isShared bool) (*Postgres, error) {
	p := &Postgres{Host: "127.0.0.1", shared: isShared, bin: bin}
	p.stopSig = syscall.SIGINT // fast shutdown: sessions are terminated
	if err := p.prepare(); err != nil {
		return nil, err
	}
	if err := p.initdb(); err != nil {
		p.lock.Close()
		os.RemoveAll(p.dir)
		return nil, err
	}
	if err := p.start(true); err != nil {
		p.releasePorts()
		p.lock.Close()
		os.RemoveAll(p.dir)
		return nil, err
	}
	return p, nil
}

// prepare makes the run dir, locks it (a dir whose lock is free belongs to
// a dead process and is swept) and, as root, hands it to the postgres OS
// user: PostgreSQL refuses to run as root.
func (p *Postgres) prepare() error {
	root := pgRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	sweepPGRoot(root)
	dir, err := os.MkdirTemp(root, "run-")
	if err != nil {
		return err
	}
	p.dir, p.SocketDir = dir, filepath.Join(dir, "sock")
	if p.lock, err = lockFile(filepath.Join(dir, "lock")); err != nil {
		os.RemoveAll(dir)
		return err
	}
	if err := os.Mkdir(p.SocketDir, 0o755); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs the postgres OS user (the postgresql package creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	for _, d := range []string{dir, p.SocketDir} {
		if err := os.Chown(d, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

// lockFile creates path and holds an exclusive flock on it for as long as
// the returned file is open (the kernel drops it when the process dies).
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepPGRoot removes run dirs left by dead test binaries: their lock is
// free, or they never got one and are more than an hour old.
func sweepPGRoot(root string) {
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "run-") {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
		if err != nil {
			if fi, serr := os.Stat(dir); serr == nil && time.Since(fi.ModTime()) > time.Hour {
				os.RemoveAll(dir)
			}
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}

func (p *Postgres) initdb() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(p.bin, "initdb"),
		"--pgdata="+filepath.Join(p.dir, "data"), "--username="+pgSuperuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out.String())
	}
	return nil
}

// start runs the server on p.Port, or on a fresh held port (retrying on a
// port collision) when pickPort, and waits until it accepts queries.
func (p *Postgres) start(pickPort bool) error {
	var pick func() error
	if pickPort {
		pick = func() error {
			ports, err := p.holdPorts(1)
			if err == nil {
				p.Port = ports[0]
			}
			return err
		}
	}
	proc, err := startServer(pick, func() []int { return []int{p.Port} }, p.launch, p.ready)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.proc = proc
	p.mu.Unlock()
	return nil
}

// launch starts the postmaster as the postgres OS user when root. Its
// parent-death signal is SIGQUIT (immediate shutdown), so the server and its
// backends go away with the test binary.
func (p *Postgres) launch() (*Proc, error) {
	p.runs++
	logPath := filepath.Join(p.dir, fmt.Sprintf("postgres-%d.log", p.runs))
	cmd := exec.Command(filepath.Join(p.bin, "postgres"),
		"-D", filepath.Join(p.dir, "data"),
		"-c", "listen_addresses="+p.Host, "-c", "port="+strconv.Itoa(p.Port),
		"-c", "unix_socket_directories="+p.SocketDir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=300", "-c", "shared_buffers=32MB",
		"-c", "max_wal_size=1GB", "-c", "checkpoint_timeout=1h",
		"-c", "log_min_messages=warning", "-c", "log_min_error_statement=panic",
	)
	return startProc("postgres", logPath, cmd, syscall.SIGQUIT, p.cred)
}

func (p *Postgres) ready(ctx context.Context) error {
	c, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	if p.Version == "" {
		return c.QueryRow(ctx, "SHOW server_version").Scan(&p.Version)
	}
	return c.Ping(ctx)
}

// URL is the connection URL of database db, e.g.
// "postgres://carbongate@127.0.0.1:41234/db?sslmode=disable".
func (p *Postgres) URL(db string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", pgSuperuser,
		net.JoinHostPort(p.Host, strconv.Itoa(p.Port)), db)
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// testIdent is a lowercase SQL identifier for tb's database or schema
// number seq: t_<test name, 40 at most>_<seq>_<random>.
func testIdent(tb testing.TB, seq int) string {
	name := strings.Trim(nonIdent.ReplaceAllString(strings.ToLower(tb.Name()), "_"), "_")
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("t_%s_%d_%s", name, seq, randomHex(tb, 3))
}

// Database creates an empty database for tb, named after the test, and
// returns its URL (see URL). It is dropped in tb.Cleanup, its sessions
// terminated.
func (p *Postgres) Database(tb testing.TB) string {
	tb.Helper()
	p.mu.Lock()
	p.dbSeq++
	name := testIdent(tb, p.dbSeq)
	p.mu.Unlock()
	if err := p.exec("CREATE DATABASE " + pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("services: create database: %v", err)
	}
	tb.Cleanup(func() {
		if !p.Running() {
			return
		}
		if err := p.exec("DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"); err != nil {
			tb.Errorf("services: drop database %s: %v", name, err)
		}
	})
	return p.URL(name)
}

// exec runs one statement as superuser in the postgres database.
func (p *Postgres) exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// Stop shuts the server down (fast shutdown: sessions are terminated, then
// it exits) and waits for it. Only for servers of StartPrivatePostgres.
func (p *Postgres) Stop(tb testing.TB) {
	tb.Helper()
	if p.shared {
		tb.Fatalf("services: the shared PostgreSQL server cannot be stopped; use StartPrivatePostgres")
	}
	p.stop()
}

// Start starts a stopped server again on the same port and data. The port
// stays held while the server is down (see PortHold); if another process
// took it all the same, Start fails naming that process. Only for servers
// of StartPrivatePostgres.
func (p *Postgres) Start(tb testing.TB) {
	tb.Helper()
	if p.shared {
		tb.Fatalf("services: the shared PostgreSQL server cannot be restarted; use StartPrivatePostgres")
	}
	if p.Running() {
		return
	}
	if err := p.start(false); err != nil {
		tb.Fatalf("services: restart PostgreSQL: %v", err)
	}
}

// Restart is Stop then Start.
func (p *Postgres) Restart(tb testing.TB) {
	tb.Helper()
	p.Stop(tb)
	p.Start(tb)
}
