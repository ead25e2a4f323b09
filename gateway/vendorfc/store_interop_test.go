//go:build interop

package vendorfc

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/forecast/store/postgres"
	"github.com/carbongate/carbongate/test/services"
)

// The vendor's forecasts stored in real PostgreSQL and scored beside a
// model's, as on the memory store.
func TestStorePollerPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := postgres.Open(ctx, services.StartPostgres(t).Database(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	testStorePoller(t, db)
}
