//go:build interop

package crateblob_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/crateblob"
	"github.com/carbongate/carbongate/test/services"
)

var tables atomic.Int64

// table creates a blob table of t's own on the shared CrateDB server
// (with CreateTable, twice: the second call finds it) and drops it in
// t.Cleanup.
func table(t *testing.T) (*crateblob.Client, crateblob.Location) {
	t.Helper()
	crate := services.StartCrateDB(t)
	c := crateblob.New(crateblob.Config{Timeout: 30 * time.Second})
	t.Cleanup(c.Close)
	l, err := crateblob.ParseURI(fmt.Sprintf("crate+blob://%s:%d/t%d_%d", crate.Host, crate.HTTPPort, os.Getpid(), tables.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if err := c.CreateTable(ctx, l); err != nil {
			t.Fatalf("CreateTable: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := c.DropTable(context.Background(), l); err != nil {
			t.Errorf("drop %s: %v", l, err)
		}
	})
	return c, l
}

// modelDir writes a small directory with a nested file and returns it
// with its files' contents by slash path.
func modelDir(t *testing.T, salt string) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"MLmodel":            []byte("flavors: {}\nsalt: " + salt + "\n"),
		"model/weights.json": bytes.Repeat([]byte(`{"w":[1,2,3]}`+salt), 500),
		"empty.txt":          nil,
	}
	for p, b := range files {
		f := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, files
}

func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameFiles(t *testing.T, got, want map[string][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d files, want %d", len(got), len(want))
	}
	for p, b := range want {
		if g, ok := got[p]; !ok || !bytes.Equal(g, b) {
			t.Fatalf("file %s: got %d bytes (present %v), want %d", p, len(g), ok, len(b))
		}
	}
}

func wantCode(t *testing.T, err error, code, contains string) {
	t.Helper()
	if got := forecast.ErrorCode(err); got != code {
		t.Fatalf("error code %s (%v), want %s", got, err, code)
	}
	if !strings.Contains(err.Error(), contains) {
		t.Fatalf("error %q does not say %q", err, contains)
	}
}

// TestRoundTripLive: a directory uploaded to a live CrateDB blob table
// comes back byte for byte; a second upload of the same files creates
// nothing (content addressing) and names the same manifest; Delete
// removes a blob.
func TestRoundTripLive(t *testing.T) {
	t.Parallel()
	c, tbl := table(t)
	ctx := context.Background()
	dir, files := modelDir(t, "a")
	up, err := c.Upload(ctx, dir, tbl, 1<<20)
	if err != nil {
		t.Fatalf("Upload: %v", err)
	}
	if got, want := len(up.Created), len(files)+1; got != want {
		t.Fatalf("created %d blobs, want %d (files and manifest)", got, want)
	}
	if !strings.HasPrefix(up.Location.String(), tbl.String()+"/") || up.Location.Digest == "" {
		t.Fatalf("location %s is not a blob of %s", up.Location, tbl)
	}
	back, err := crateblob.ParseURI(up.Location.String())
	if err != nil || back != up.Location {
		t.Fatalf("ParseURI(%s) = %+v, %v", up.Location, back, err)
	}
	dst := t.TempDir()
	m, err := c.Download(ctx, up.Location, dst, 1<<20, 10)
	if err != nil {
		t.Fatalf("Download: %v", err)
	}
	if len(m.Files) != len(files) {
		t.Fatalf("manifest lists %d files, want %d", len(m.Files), len(files))
	}
	sameFiles(t, readDir(t, dst), files)

	again, err := c.Upload(ctx, dir, tbl, 1<<20)
	if err != nil {
		t.Fatalf("second Upload: %v", err)
	}
	if again.Location != up.Location || len(again.Created) != 0 {
		t.Fatalf("second upload: %s, created %v; want %s, none", again.Location, again.Created, up.Location)
	}
	if ok, err := c.Exists(ctx, up.Location); err != nil || !ok {
		t.Fatalf("Exists(manifest) = %v, %v", ok, err)
	}
	if err := c.Delete(ctx, up.Location); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if ok, err := c.Exists(ctx, up.Location); err != nil || ok {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if err := c.Delete(ctx, up.Location); err != nil {
		t.Fatalf("Delete of a missing blob: %v", err)
	}
}

// TestDigestMismatchLive: CrateDB refuses a blob whose bytes do not hash
// to its name (EINVALID, nothing stored), and a download whose bytes were
// changed on the way (a proxy flips one) is refused by the client.
func TestDigestMismatchLive(t *testing.T) {
	t.Parallel()
	c, tbl := table(t)
	ctx := context.Background()
	body := []byte("the real bytes")
	wrong := crateblob.Digest([]byte("other bytes"))
	_, err := c.Put(ctx, tbl, wrong, bytes.NewReader(body), int64(len(body)))
	wantCode(t, err, forecast.EINVALID, "does not hash to")
	if ok, err := c.Exists(ctx, tbl.Blob(wrong)); err != nil || ok {
		t.Fatalf("Exists(refused blob) = %v, %v", ok, err)
	}

	dir, _ := modelDir(t, "mismatch")
	up, err := c.Upload(ctx, dir, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://" + tbl.Host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method != http.MethodGet || r.StatusCode != http.StatusOK {
			return nil
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		r.Body.Close()
		if !bytes.HasPrefix(b, []byte(`{"format"`)) && len(b) > 0 {
			b[len(b)/2] ^= 1 // a file, not the manifest
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	via := up.Location
	via.Host = strings.TrimPrefix(srv.URL, "http://")
	_, err = c.Download(ctx, via, t.TempDir(), 0, 0)
	wantCode(t, err, forecast.EINVALID, "hash to")
}

// TestSizeCapLive: Upload refuses a directory over its cap before storing
// anything, naming the size; Download refuses a manifest over the limits
// before writing anything.
func TestSizeCapLive(t *testing.T) {
	t.Parallel()
	c, tbl := table(t)
	ctx := context.Background()
	dir, files := modelDir(t, "cap")
	var total int64
	for _, b := range files {
		total += int64(len(b))
	}
	_, err := c.Upload(ctx, dir, tbl, total-1)
	wantCode(t, err, forecast.EINVALID, fmt.Sprintf("holds %d bytes in 3 files, over the artifact size limit of %d bytes", total, total-1))
	for p, b := range files {
		if ok, err := c.Exists(ctx, tbl.Blob(crateblob.Digest(b))); err != nil || ok {
			t.Fatalf("%s stored after a refused upload (%v, %v)", p, ok, err)
		}
	}
	up, err := c.Upload(ctx, dir, tbl, total)
	if err != nil {
		t.Fatalf("Upload at the cap: %v", err)
	}
	dst := t.TempDir()
	_, err = c.Download(ctx, up.Location, dst, total-1, 10)
	wantCode(t, err, forecast.EINVALID, fmt.Sprintf("holds %d bytes in 3 files, over the limits of %d bytes and 10 files", total, total-1))
	_, err = c.Download(ctx, up.Location, dst, total, 2)
	wantCode(t, err, forecast.EINVALID, "over the limits")
	if got := readDir(t, dst); len(got) != 0 {
		t.Fatalf("refused download wrote %d files", len(got))
	}
}

// TestNotFoundLive: a missing manifest, a manifest whose file blob is
// gone, and a missing table are ENOTFOUND.
func TestNotFoundLive(t *testing.T) {
	t.Parallel()
	c, tbl := table(t)
	ctx := context.Background()
	_, err := c.Download(ctx, tbl.Blob(crateblob.Digest([]byte("never stored"))), t.TempDir(), 0, 0)
	wantCode(t, err, forecast.ENOTFOUND, "404")

	dir, files := modelDir(t, "gone")
	up, err := c.Upload(ctx, dir, tbl, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, tbl.Blob(crateblob.Digest(files["MLmodel"]))); err != nil {
		t.Fatal(err)
	}
	_, err = c.Download(ctx, up.Location, t.TempDir(), 0, 0)
	wantCode(t, err, forecast.ENOTFOUND, crateblob.Digest(files["MLmodel"]))

	missing := tbl
	missing.Table = "no_such_table"
	_, err = c.Download(ctx, missing.Blob(up.Location.Digest), t.TempDir(), 0, 0)
	wantCode(t, err, forecast.ENOTFOUND, "no_such_table")
}

// TestUnreachableLive: a port nobody listens on fails at once, and a
// server that accepts and never answers fails at the client's timeout;
// both EUNAVAILABLE naming the server.
func TestUnreachableLive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	closed := services.FreePort(t)
	c := crateblob.New(crateblob.Config{Timeout: time.Second})
	t.Cleanup(c.Close)
	l, _ := crateblob.ParseURI(fmt.Sprintf("crate+blob://127.0.0.1:%d/models", closed))
	t0 := time.Now()
	_, err := c.Download(ctx, l.Blob(crateblob.Digest(nil)), t.TempDir(), 0, 0)
	wantCode(t, err, forecast.EUNAVAILABLE, fmt.Sprintf("CrateDB blob store at 127.0.0.1:%d unreachable", closed))
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("refused connection took %v", d)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn // accepted, never answered
		for {
			conn, err := ln.Accept()
			if err != nil {
				for _, c := range held {
					c.Close()
				}
				return
			}
			held = append(held, conn)
		}
	}()
	mute, _ := crateblob.ParseURI("crate+blob://" + ln.Addr().String() + "/models")
	t0 = time.Now()
	err = c.CreateTable(ctx, mute)
	wantCode(t, err, forecast.EUNAVAILABLE, "no answer in time")
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("a mute server held the call %v (timeout 1 s)", d)
	}
}
