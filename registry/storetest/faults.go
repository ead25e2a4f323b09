package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// The fault cases: a fault of the database (closed store, tables never
// created, server down) has the same code on every backend, EUNAVAILABLE,
// so that every transport answers it alike (HTTP 503, MLflow
// TEMPORARILY_UNAVAILABLE) and clients retry; never ENOTFOUND, which would
// say that the model does not exist. Credentials the server refuses are
// EUNAUTHORIZED on every backend.

// someCalls are one call of each kind: reads, writes, searches.
func someCalls(s registry.Store) []struct {
	note string
	call func(ctx context.Context) error
} {
	return []struct {
		note string
		call func(ctx context.Context) error
	}{
		{"GetModel", func(ctx context.Context) error { _, err := s.GetModel(ctx, "m"); return err }},
		{"CreateModel", func(ctx context.Context) error { _, err := s.CreateModel(ctx, "n", "", nil); return err }},
		{"SearchModels", func(ctx context.Context) error {
			_, _, err := s.SearchModels(ctx, registry.Search{MaxResults: 10})
			return err
		}},
		{"CreateVersion", func(ctx context.Context) error {
			_, err := s.CreateVersion(ctx, registry.NewVersion{Name: "m", Source: "s3://models/m"})
			return err
		}},
		{"GetVersion", func(ctx context.Context) error { _, err := s.GetVersion(ctx, "m", 1); return err }},
		{"SetAlias", func(ctx context.Context) error { return s.SetAlias(ctx, "m", "champion", 1) }},
		{"AliasTargets", func(ctx context.Context) error { _, err := s.AliasTargets(ctx); return err }},
	}
}

// wantEvery fails t unless every call of someCalls on s fails with code
// and a message that contains hint.
func wantEvery(t *testing.T, ctx context.Context, s registry.Store, code, fault, hint string) {
	t.Helper()
	for _, c := range someCalls(s) {
		err := c.call(ctx)
		wantErr(t, c.note+" "+fault, err, code, "")
		if !strings.Contains(forecast.ErrorMessage(err), hint) {
			t.Fatalf("%s %s: message %q does not say %q", c.note, fault, forecast.ErrorMessage(err), hint)
		}
	}
}

// testClosed: every call after Close is EUNAVAILABLE, and Close may be
// called again.
func testClosed(t *testing.T, e *env) {
	e.createModel(t, "m")
	e.newVersion(t, "m")
	if err := e.s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	wantEvery(t, e.ctx, e.s, forecast.EUNAVAILABLE, "after Close", "")
}

// testOpenFault opens a store with open, which has a fault: either open
// fails or every call fails, with code and a message containing hint.
func testOpenFault(t *testing.T, open func(t *testing.T, o registry.Options) (registry.Store, error), code, fault, hint string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clk := &clock{ms: startMillis}
	s, err := open(t, registry.Options{Now: clk.Now})
	if err != nil {
		wantErr(t, "open "+fault, err, code, "")
		if !strings.Contains(forecast.ErrorMessage(err), hint) {
			t.Fatalf("open %s: message %q does not say %q", fault, forecast.ErrorMessage(err), hint)
		}
		return
	}
	defer s.Close()
	wantEvery(t, ctx, s, code, fault, hint)
}
