package store_test

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/storetest"
)

// memoryDB makes a Memory a store.DB: it has no tables and no connections.
type memoryDB struct{ *store.Memory }

func (memoryDB) Migrate(context.Context) error { return nil }
func (memoryDB) Close()                        {}

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(*testing.T) store.DB { return memoryDB{store.NewMemory()} }, storetest.Options{Except: map[string]string{
		"Unmigrated":   "Memory has no tables to create",
		"Closed":       "Memory holds no connection to close",
		"Unreachable":  "Memory has no server",
		"Unauthorized": "Memory has no credentials",
	}})
}

func TestMemoryCanceledContext(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.WriteForecasts(ctx, "job", nil, []store.ForecastRow{storetest.Row("DE", "m", "1", 0, 0, false)}); err == nil {
		t.Fatal("WriteForecasts with a canceled context succeeded")
	}
	if err := m.UpsertObserved(ctx, "DE", "direct", storetest.Obs(0)); err == nil {
		t.Fatal("UpsertObserved with a canceled context succeeded")
	}
	if n := len(storetest.ReadAll(t, m, store.ForecastQuery{})); n != 0 {
		t.Fatalf("%d rows stored under a canceled context", n)
	}
}
