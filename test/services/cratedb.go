package services

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	neturl "net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// CrateDBHomeEnv names the environment variable holding the CrateDB install
// dir (CRATE_HOME); test/setup/cratedb.sh prints it.
const CrateDBHomeEnv = "CARBONGATE_CRATEDB_HOME"

// crateUser is the database user every URL logs in as (CrateDB's superuser,
// trusted from the local machine only).
const crateUser = "crate"

// CrateDB is a single-node CrateDB server running from a temp dir, bound to
// 127.0.0.1 on free ports, as an unprivileged OS user (CrateDB refuses to
// run as root) that owns its config, data and log dirs.
type CrateDB struct {
	// Host and PSQLPort are the PostgreSQL wire protocol address, HTTPPort
	// CrateDB's HTTP endpoint.
	Host     string
	PSQLPort int
	HTTPPort int
	// Version is the server's version() string, "CrateDB 6.4.3 (...)".
	Version string
	// StartTime is how long the start took until the first query answered.
	StartTime time.Duration

	transportPort int                 // node-to-node port (a single node: unused, still bound)
	home          string              // CRATE_HOME the server runs from
	cred          *syscall.Credential // the unprivileged user when root

	server         // the current process
	isPrivate bool // started by StartPrivateCrateDB: may be stopped
	runs      int  // under mu
	schema    int  // under mu
}

var sharedCrate shared[*CrateDB]

// StartCrateDB returns the test binary's CrateDB server, starting it on
// first use (about 10 s); every test of the binary shares it (give each its
// own schema with Schema). The server dies with the test binary; its run
// dir is removed by the next start on this machine. Without a CrateDB
// install the test fails (see CrateDBHome).
func StartCrateDB(tb testing.TB) *CrateDB {
	tb.Helper()
	home := CrateDBHome(tb)
	return sharedCrate.get(tb, "CrateDB", func() (*CrateDB, error) { return startCrateDB(home) })
}

// StartPrivateCrateDB starts a CrateDB server of tb's own (about 10 s),
// which tb may Stop and Start; it is stopped and its files removed in
// tb.Cleanup.
func StartPrivateCrateDB(tb testing.TB) *CrateDB {
	tb.Helper()
	c, err := startCrateDB(CrateDBHome(tb))
	if err != nil {
		tb.Fatalf("services: start CrateDB: %v", err)
	}
	c.isPrivate = true
	c.server.private(tb, "CrateDB")
	return c
}

// Stop shuts the server down (SIGTERM: CrateDB closes its shards and
// exits) and waits for it. Only for servers of StartPrivateCrateDB.
func (c *CrateDB) Stop(tb testing.TB) {
	tb.Helper()
	if !c.isPrivate {
		tb.Fatalf("services: the shared CrateDB server cannot be stopped; use StartPrivateCrateDB")
	}
	c.stop()
}

// Start starts a stopped server again on the same ports and data, and
// returns once a query answers. The ports stay held while the server is
// down (see PortHold); if another process took one all the same, Start
// fails naming that process. Only for servers of StartPrivateCrateDB.
func (c *CrateDB) Start(tb testing.TB) {
	tb.Helper()
	if !c.isPrivate {
		tb.Fatalf("services: the shared CrateDB server cannot be restarted; use StartPrivateCrateDB")
	}
	if c.Running() {
		return
	}
	if err := c.run(nil, c.recovered); err != nil {
		tb.Fatalf("services: restart CrateDB: %v", err)
	}
}

// CrateDBHome returns the CrateDB install dir: $CrateDBHomeEnv when set
// (make sets it), else what test/setup/cratedb.sh unpacks or finds. It fails
// the test when there is none.
func CrateDBHome(tb testing.TB) string {
	tb.Helper()
	home := os.Getenv(CrateDBHomeEnv)
	if home == "" {
		home = Setup(tb, "cratedb.sh")
	}
	if _, err := os.Stat(filepath.Join(home, "bin", "crate")); err != nil {
		tb.Fatalf("services: %s=%s is no CrateDB install (run test/setup/cratedb.sh): %v", CrateDBHomeEnv, home, err)
	}
	return home
}

// crateRoot is the parent of run dirs and of readable copies of installs.
func crateRoot() string { return filepath.Join(os.TempDir(), "carbongate-cratedb") }

func startCrateDB(home string) (*CrateDB, error) {
	c := &CrateDB{Host: "127.0.0.1", home: home}
	c.stopSig = syscall.SIGTERM // CrateDB closes its shards and exits
	if err := c.prepare(); err != nil {
		return nil, err
	}
	begin := time.Now()
	if err := c.start(); err != nil {
		c.releasePorts()
		c.lock.Close()
		os.RemoveAll(c.dir)
		return nil, err
	}
	c.StartTime = time.Since(begin)
	return c, nil
}

// prepare makes the run dir and, as root, picks the unprivileged user
// (nobody), hands it the run dir and makes sure it can read the install.
func (c *CrateDB) prepare() error {
	root := crateRoot()
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	sweepPGRoot(root)
	dir, err := os.MkdirTemp(root, "run-")
	if err != nil {
		return err
	}
	c.dir = dir
	if c.lock, err = lockFile(filepath.Join(dir, "lock")); err != nil {
		os.RemoveAll(dir)
		return err
	}
	for _, d := range []string{"conf", "data", "logs"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	b, err := os.ReadFile(filepath.Join(c.home, "config", "log4j2.properties"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "log4j2.properties"), b, 0o644); err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := 65534, 65534
	if u, err := user.Lookup("nobody"); err == nil {
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
	}
	c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
	if err != nil {
		return err
	}
	if !othersCanReach(c.home) {
		c.home, err = readableCopy(c.home)
	}
	return err
}

// othersCanReach reports whether every dir from / down to path lets other
// users in (the install lives under root's home, often mode 0700).
func othersCanReach(path string) bool {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm()&0o001 == 0 {
			return false
		}
		if p == filepath.Dir(p) {
			return true
		}
	}
}

// readableCopy mirrors home under crateRoot, once per install, with hard
// links where the file system allows (else copies), so that an
// unprivileged user can read it.
func readableCopy(home string) (string, error) {
	dst := filepath.Join(crateRoot(), "home-"+filepath.Base(home))
	if _, err := os.Stat(filepath.Join(dst, ".done")); err == nil {
		return dst, nil
	}
	l, err := os.OpenFile(dst+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer l.Close()
	if err := syscall.Flock(int(l.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dst, ".done")); err == nil {
		return dst, nil
	}
	os.RemoveAll(dst)
	err = filepath.WalkDir(home, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, path)
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case rel == ".done":
			return nil
		}
		if os.Link(path, to) == nil {
			return nil
		}
		return copyFile(path, to)
	})
	if err != nil {
		return "", fmt.Errorf("readable copy of %s: %w", home, err)
	}
	return dst, os.WriteFile(filepath.Join(dst, ".done"), nil, 0o644)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm()|0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// start picks free ports, writes the config and runs the server until it
// answers a query, retrying with new ports on a port collision.
func (c *CrateDB) start() error {
	pick := func() error {
		ports, err := c.holdPorts(3)
		if err != nil {
			return err
		}
		c.HTTPPort, c.PSQLPort, c.transportPort = ports[0], ports[1], ports[2]
		return c.writeConfig()
	}
	return c.run(pick, c.ready)
}

// run launches the server (pick: new ports, nil: the same) and keeps its
// process once ready answers nil.
func (c *CrateDB) run(pick func() error, ready func(context.Context) error) error {
	ports := func() []int { return []int{c.HTTPPort, c.PSQLPort, c.transportPort} }
	proc, err := startServer(pick, ports, c.launch, ready)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.proc = proc
	c.mu.Unlock()
	return nil
}

// writeConfig writes conf/crate.yml: a single node on loopback whose user
// crate is trusted from the local machine. Its disk watermarks are free
// space in bytes: CrateDB's default percentages of the disk's size (90 %
// used) stop every shard allocation, so every CREATE TABLE, on a large
// disk with tens of gigabytes still free, as a test machine's often is.
func (c *CrateDB) writeConfig() error {
	yml := fmt.Sprintf(`cluster.name: carbongate-test
node.name: carbongate-test
network.host: %s
http.port: %d
psql.port: %d
transport.port: %d
discovery.type: single-node
path.data: %s
path.logs: %s
cluster.routing.allocation.disk.watermark.low: 2gb
cluster.routing.allocation.disk.watermark.high: 1gb
cluster.routing.allocation.disk.watermark.flood_stage: 500mb
auth.host_based.enabled: true
auth.host_based.config:
  0:
    user: %s
    address: _local_
    method: trust
`, c.Host, c.HTTPPort, c.PSQLPort, c.transportPort,
		filepath.Join(c.dir, "data"), filepath.Join(c.dir, "logs"), crateUser)
	path := filepath.Join(c.dir, "conf", "crate.yml")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		return err
	}
	if c.cred != nil {
		return os.Chown(path, int(c.cred.Uid), int(c.cred.Gid))
	}
	return nil
}

// launch starts bin/crate (which execs java) as the unprivileged user in
// its own process group, killed with the test binary.
func (c *CrateDB) launch() (*Proc, error) {
	c.runs++
	cmd := exec.Command(filepath.Join(c.home, "bin", "crate"), "-Cpath.conf="+filepath.Join(c.dir, "conf"))
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(),
		"CRATE_HEAP_SIZE=512m",
		"CRATE_DISABLE_GC_LOGGING=1",
	)
	return startProc("cratedb", filepath.Join(c.dir, fmt.Sprintf("crate-%d.log", c.runs)), cmd, syscall.SIGKILL, c.cred)
}

// ready answers nil once a query runs (the PostgreSQL port opens before the
// node has a cluster state; queries fail until it has one).
func (c *CrateDB) ready(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.URL("doc"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return err
	}
	c.Version = v
	return nil
}

// recovered is ready once every table is green and every shard started
// again after a restart: the first queries answer while tables are still
// unknown or say "no such shard" or "shard 1 is not available".
func (c *CrateDB) recovered(ctx context.Context) error {
	if err := c.ready(ctx); err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, c.URL("doc"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var notGreen, notStarted int64
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM sys.health WHERE health <> 'GREEN'), (SELECT count(*) FROM sys.shards WHERE state <> 'STARTED')`).Scan(&notGreen, &notStarted)
	if err != nil {
		return err
	}
	if notGreen > 0 || notStarted > 0 {
		return fmt.Errorf("%d tables not green, %d shards not started", notGreen, notStarted)
	}
	return nil
}

// URL is the connection URL whose database is schema, e.g.
// "postgres://crate@127.0.0.1:41234/doc?sslmode=disable".
func (c *CrateDB) URL(schema string) string {
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", crateUser,
		net.JoinHostPort(c.Host, strconv.Itoa(c.PSQLPort)), schema)
}

// MLflowURI is the backend store URI mlflow-cratedb takes for the schema of
// url (a URL from Schema or URL): SQLAlchemy's crate:// dialect, which talks
// to CrateDB's HTTP port, with the schema as ?schema=.
func (c *CrateDB) MLflowURI(url string) string {
	schema := "doc"
	if u, err := neturl.Parse(url); err == nil && strings.Trim(u.Path, "/") != "" {
		schema = strings.Trim(u.Path, "/")
	}
	return fmt.Sprintf("crate://%s@%s/?schema=%s", crateUser, net.JoinHostPort(c.Host, strconv.Itoa(c.HTTPPort)), schema)
}

// Schema returns the URL of an empty schema of tb's own, named after the
// test (CrateDB's database name is the schema). Its tables are dropped in
// tb.Cleanup, which removes the schema: a node holds at most 1,000 shards,
// so a suite that left its tables would soon fail to create more.
func (c *CrateDB) Schema(tb testing.TB) string {
	tb.Helper()
	c.mu.Lock()
	c.schema++
	name := testIdent(tb, c.schema)
	c.mu.Unlock()
	tb.Cleanup(func() {
		if !c.Running() {
			return
		}
		if err := c.dropSchema(name); err != nil {
			tb.Errorf("services: drop CrateDB schema %s: %v", name, err)
		}
	})
	return c.URL(name)
}

// StoreURI is Schema as the crate:// URI carbongate's --store and
// --registry take (crate:// selects the CrateDB backends, which speak the
// PostgreSQL protocol).
func (c *CrateDB) StoreURI(tb testing.TB) string {
	tb.Helper()
	return "crate://" + strings.TrimPrefix(c.Schema(tb), "postgres://")
}

// dropSchema drops every view and table of schema.
func (c *CrateDB) dropSchema(schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("doc"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		return err
	}
	type rel struct{ name, kind string }
	var rels []rel
	for rows.Next() {
		var r rel
		if err := rows.Scan(&r.name, &r.kind); err != nil {
			return err
		}
		rels = append(rels, r)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var errs []error
	for _, r := range rels {
		stmt := "DROP TABLE IF EXISTS "
		if r.kind == "VIEW" {
			stmt = "DROP VIEW IF EXISTS "
		}
		if _, err := conn.Exec(ctx, stmt+pgx.Identifier{schema, r.name}.Sanitize()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pid is the server's process id.
func (c *CrateDB) Pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc.Pid()
}
