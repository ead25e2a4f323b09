//go:build interop

package cratedb_test

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/cratedb"
	"github.com/carbongate/carbongate/registry/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// TestConformanceLive runs the registry conformance suite on a live CrateDB
// server, each subtest on a schema of its own that Migrate set up, with its
// fault cases.
func TestConformanceLive(t *testing.T) {
	t.Parallel()
	crate := services.StartCrateDB(t)
	t.Logf("%s, started in %v", crate.Version, crate.StartTime.Round(100_000_000))
	storetest.Run(t, func(t *testing.T, o registry.Options) registry.Store {
		ctx := context.Background()
		url := crate.Schema(t)
		db, err := cratedb.Connect(ctx, url)
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		t.Cleanup(db.Close)
		if err := cratedb.Migrate(ctx, db); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		s, err := cratedb.Open(ctx, url, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	}, storetest.Options{
		Except: map[string]string{"TagLimits": "a row per tag, as in MLflow's own SQL stores, which have no cap on the tags of a model or version: not enforced here either"},
		Unmigrated: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return cratedb.Open(context.Background(), crate.Schema(t), o)
		},
		Unreachable: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return cratedb.Open(context.Background(), "postgres://crate@127.0.0.1:1/doc?connect_timeout=5", o)
		},
		Unauthorized: func(t *testing.T, o registry.Options) (registry.Store, error) {
			return cratedb.Open(context.Background(), services.WithUser(t, crate.Schema(t), "nobody"), o)
		},
	})
}
