//go:build interop

package cratedb_test

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/cratedb"
	"github.com/carbongate/carbongate/forecast/store/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// TestConformanceLive runs the forecast-store conformance suite on a live
// CrateDB server, each subtest on a schema of its own.
func TestConformanceLive(t *testing.T) {
	t.Parallel()
	crate := services.StartCrateDB(t)
	t.Logf("%s, started in %v", crate.Version, crate.StartTime.Round(100_000_000))
	storetest.Run(t, func(t *testing.T) store.DB {
		s, err := cratedb.Open(context.Background(), crate.Schema(t))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(s.Close)
		return s
	}, storetest.Options{
		Unreachable: func(t *testing.T) (store.DB, error) {
			return cratedb.Open(context.Background(), "postgres://crate@127.0.0.1:1/doc?connect_timeout=5")
		},
		Unauthorized: func(t *testing.T) (store.DB, error) {
			return cratedb.Open(context.Background(), services.WithUser(t, crate.Schema(t), "nobody"))
		},
	})
}
