//go:build interop

package postgres_test

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/postgres"
	"github.com/carbongate/carbongate/forecast/store/storetest"
	"github.com/carbongate/carbongate/test/services"
)

// open returns a Store on a database of t's own on the shared server.
func open(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), services.StartPostgres(t).Database(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.DB { return open(t) }, storetest.Options{
		Unreachable: func(t *testing.T) (store.DB, error) {
			return postgres.Open(context.Background(), "postgres://carbongate@127.0.0.1:1/store?connect_timeout=5")
		},
		Unauthorized: func(t *testing.T) (store.DB, error) {
			return postgres.Open(context.Background(), services.WithUser(t, services.StartPostgres(t).Database(t), "nobody"))
		},
	})
}
