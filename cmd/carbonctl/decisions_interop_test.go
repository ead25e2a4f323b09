//go:build interop

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/registry"
	regconnect "github.com/carbongate/carbongate/registry/connect"
)

// TestDecisionsPostgres replays the stored forecasts of two versions
// through evaluate --decisions, then lets promote --keep-capture decline
// the version with the lower error but the worse decisions, against one
// PostgreSQL database holding the registry and the forecast store.
func TestDecisionsPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, url := pgStore(ctx, t)
	observeDE(t, db, 15)
	backfillDE(t, db, "carbon-forecaster-DE", "1", 0, 10, 0.08, 0)
	backfillBumped(t, db, "carbon-forecaster-DE", "2", 0, 10, 3)

	code, out, errOut := run("evaluate", "--decisions", "--store", url, "--shapes", "1h/24h", "--every", "24h", "--output", "json")
	if code != 0 {
		t.Fatalf("evaluate: exit %d: %s", code, errOut)
	}
	var rep struct {
		Capture map[string]float64
		Shapes  []struct{ Issues int }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Day 0 has no day of history for seasonal naive: 9 issues.
	if rep.Shapes[0].Issues != 9 || rep.Capture["carbon-forecaster-*@1"] != 1 || !(rep.Capture["carbon-forecaster-*@2"] < 0.97) {
		t.Fatalf("report %+v", rep)
	}

	if code, _, errOut := run("registry", "migrate", "--registry", url); code != 0 {
		t.Fatalf("registry migrate: exit %d: %s", code, errOut)
	}
	reg, _, err := regconnect.Open(ctx, url, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if _, err := reg.CreateModel(ctx, "carbon-forecaster-DE", "", nil); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := reg.CreateVersion(ctx, registry.NewVersion{Name: "carbon-forecaster-DE", Source: t.TempDir()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.SetAlias(ctx, "carbon-forecaster-DE", "champion", 1); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run("promote", "--registry", url, "--zone", "DE", "--if-better", "--store", url, "--keep-capture", "--shapes", "1h/24h")
	if code != 3 || !strings.Contains(out, "capture 0.966 against 1.000") {
		t.Fatalf("promote: exit %d\n%s\n%s", code, out, errOut)
	}
	if champ, err := reg.VersionByAlias(ctx, "carbon-forecaster-DE", "champion"); err != nil || champ.Version != 1 {
		t.Fatalf("champion %d, %v", champ.Version, err)
	}
	mv, err := reg.GetVersion(ctx, "carbon-forecaster-DE", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range mv.Tags {
		if tg.Key == "eval.capture" && tg.Value != "0.966" {
			t.Fatalf("eval.capture %s", tg.Value)
		}
	}
}
