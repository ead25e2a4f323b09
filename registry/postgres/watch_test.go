//go:build interop

package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/postgres"
	"github.com/carbongate/carbongate/test/services"
)

// wantSignal waits up to a second for a value on ch.
func wantSignal(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed, want a notification", what)
		}
	case <-time.After(time.Second):
		t.Fatalf("%s: no notification within a second", what)
	}
}

// wantQuiet checks that nothing arrives on ch for a while.
func wantQuiet(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case _, ok := <-ch:
		t.Fatalf("%s: got a notification (open=%v), want none", what, ok)
	case <-time.After(200 * time.Millisecond):
	}
}

// wantClosed waits up to timeout for ch to be closed.
func wantClosed(t *testing.T, what string, ch <-chan struct{}, timeout time.Duration) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatalf("%s: channel still open after %v", what, timeout)
		}
	}
}

// TestWatchAliases: every change to the alias table — set, replace,
// delete, a rename carrying aliases, a version delete, a model delete —
// is notified within a second; bursts coalesce; other writes are quiet.
func TestWatchAliases(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	wctx, cancel := context.WithCancel(ctx)
	ch, err := s.WatchAliases(wctx)
	if err != nil {
		t.Fatalf("WatchAliases: %v", err)
	}
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b"}); err != nil {
			t.Fatal(err)
		}
	}
	wantQuiet(t, "model and versions created", ch)

	steps := []struct {
		note string
		do   func() error
	}{
		{"SetAlias", func() error { return s.SetAlias(ctx, "m", "champion", 1) }},
		{"SetAlias again", func() error { return s.SetAlias(ctx, "m", "champion", 2) }},
		{"DeleteAlias", func() error { return s.DeleteAlias(ctx, "m", "champion") }},
		{"SetAlias by an MLflow server (plain SQL)", func() error {
			sql(t, url, `INSERT INTO registered_model_aliases (alias, version, name) VALUES ('challenger', 3, 'm')`)
			return nil
		}},
		{"RenameModel", func() error { _, err := s.RenameModel(ctx, "m", "m2"); return err }},
		{"DeleteVersion", func() error { return s.DeleteVersion(ctx, "m2", 3) }},
		{"DeleteModel", func() error {
			if err := s.SetAlias(ctx, "m2", "champion", 1); err != nil {
				return err
			}
			wantSignal(t, "SetAlias before DeleteModel", ch)
			return s.DeleteModel(ctx, "m2")
		}},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.note, err)
		}
		wantSignal(t, st.note, ch)
	}

	// A burst coalesces into at most one pending value, never blocking.
	if _, err := s.CreateModel(ctx, "burst", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "burst", Source: "s3://b"}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if err := s.SetAlias(ctx, "burst", "champion", 1); err != nil {
			t.Fatal(err)
		}
	}
	wantSignal(t, "burst", ch)
	time.Sleep(200 * time.Millisecond)
	drained := 0
	for len(ch) > 0 {
		<-ch
		drained++
	}
	if drained > 1 {
		t.Fatalf("%d values pending after a burst, want at most 1", drained)
	}

	cancel()
	wantClosed(t, "after ctx cancel", ch, 5*time.Second)
}

// TestWatchAliasesNoTrigger: without carbongate's trigger WatchAliases is
// ENOTFOUND (the caller polls); InstallTrigger fixes that.
func TestWatchAliasesNoTrigger(t *testing.T) {
	t.Parallel()
	url := migrated(t)
	sql(t, url, `DROP TRIGGER `+postgres.TriggerName+` ON registered_model_aliases`)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	_, err := s.WatchAliases(ctx)
	wantCode(t, "WatchAliases without the trigger", err, forecast.ENOTFOUND)
	if err := s.InstallTrigger(ctx); err != nil {
		t.Fatalf("InstallTrigger: %v", err)
	}
	if err := s.InstallTrigger(ctx); err != nil {
		t.Fatalf("InstallTrigger again: %v", err)
	}
	ch, err := s.WatchAliases(ctx)
	if err != nil {
		t.Fatalf("WatchAliases after InstallTrigger: %v", err)
	}
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAlias(ctx, "m", "champion", 1); err != nil {
		t.Fatal(err)
	}
	wantSignal(t, "SetAlias", ch)

	// Close ends the watcher.
	s.Close()
	wantClosed(t, "after Close", ch, 5*time.Second)
	_, err = s.WatchAliases(ctx)
	wantCode(t, "WatchAliases after Close", err, forecast.EUNAVAILABLE)

	empty := open(t, services.StartPostgres(t).Database(t), registry.Options{})
	wantCode(t, "InstallTrigger without tables", empty.InstallTrigger(ctx), forecast.ENOTFOUND)
	_, err = empty.WatchAliases(ctx)
	wantCode(t, "WatchAliases without tables", err, forecast.ENOTFOUND)
}

// TestServerRestart takes a private server down in the middle of a
// CreateVersion (waiting on a row lock another session holds): the call
// fails EUNAVAILABLE and writes nothing, the watcher's channel closes,
// calls while the server is down fail EUNAVAILABLE promptly, and the same
// Store works again once the server is back.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	pg := services.StartPrivatePostgres(t)
	url := pg.Database(t)
	migrate(t, url)
	s := open(t, url, registry.Options{})
	ctx := testCtx(t)
	if _, err := s.CreateModel(ctx, "m", "", nil); err != nil {
		t.Fatal(err)
	}
	ch, err := s.WatchAliases(ctx)
	if err != nil {
		t.Fatal(err)
	}

	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(context.Background())
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM registered_models WHERE name = 'm' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b"})
		done <- err
	}()
	waitFor(t, "CreateVersion to wait on the row lock", func() bool {
		var n int
		err := locker.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`).Scan(&n)
		return err == nil && n == 1
	})

	// A fast shutdown signals every session; the lock holder's may end
	// (releasing the row) before the waiting one's does, and on a loaded
	// machine the waiting CreateVersion then committed before its own
	// signal came. Its session is ended first, as the shutdown would.
	if _, err := locker.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`); err != nil {
		t.Fatal(err)
	}
	pg.Stop(t)
	select {
	case err := <-done:
		wantCode(t, "CreateVersion when the server went away", err, forecast.EUNAVAILABLE)
	case <-time.After(10 * time.Second):
		t.Fatal("CreateVersion still running 10s after the server stopped")
	}
	wantClosed(t, "watcher after the server stopped", ch, 5*time.Second)
	start := time.Now()
	_, err = s.GetModel(ctx, "m")
	wantCode(t, "GetModel while the server is down", err, forecast.EUNAVAILABLE)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("GetModel while down took %v", d)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.GetModel(cctx, "m")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("GetModel with a canceled ctx: %v, want context.Canceled in the chain", err)
	}

	pg.Start(t)
	waitFor(t, "GetModel to work again", func() bool {
		_, err := s.GetModel(ctx, "m")
		return err == nil
	})
	v, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://b"})
	if err != nil || v.Version != 1 {
		t.Fatalf("CreateVersion after restart = %+v, %v; want version 1 (the interrupted one wrote nothing)", v, err)
	}
	ch, err = s.WatchAliases(ctx)
	if err != nil {
		t.Fatalf("WatchAliases after restart: %v", err)
	}
	if err := s.SetAlias(ctx, "m", "champion", 1); err != nil {
		t.Fatal(err)
	}
	wantSignal(t, "SetAlias after restart", ch)
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
