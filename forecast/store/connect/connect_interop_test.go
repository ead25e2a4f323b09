//go:build interop

package connect_test

import (
	"context"
	"testing"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/forecast/store/storetest"
	"github.com/carbongate/carbongate/test/services"
)

func TestOpenPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := services.StartPostgres(t)
	for _, scheme := range []string{"postgres", "postgresql"} {
		t.Run(scheme, func(t *testing.T) {
			t.Parallel()
			url := pg.Database(t)
			db, err := connect.Open(ctx, scheme+url[len("postgres"):])
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			r := storetest.Row("DE", "m", "1", 0, 0, false)
			storetest.Write(t, db, "job", []store.Unit{{Zone: "DE", IssuedAt: r.IssuedAt}}, []store.ForecastRow{r})
			got := storetest.ReadAll(t, db, store.ForecastQuery{})
			if len(got) != 1 || !storetest.SameRow(got[0], r) {
				t.Fatalf("read %v, want %v", got, r)
			}
		})
	}
}
