//go:build interop

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/forecast/store/connect"
	"github.com/carbongate/carbongate/registry"
	regconnect "github.com/carbongate/carbongate/registry/connect"
	"github.com/carbongate/carbongate/test/services"
)

// TestEvaluatePromotePostgres runs evaluate and promote --if-better
// through the command line against one PostgreSQL database holding both
// the registry (MLflow's tables) and the forecast store.
func TestEvaluatePromotePostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db, url := pgStore(ctx, t)
	observeDE(t, db, 30)
	backfillDE(t, db, "carbon-forecaster-DE", "1", 0, 10, 0.08, 0.1)
	backfillDE(t, db, "carbon-forecaster-DE", "2", 5, 15, 0.04, 0.1)

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

	plots := filepath.Join(t.TempDir(), "plots")
	code, out, errOut := run("evaluate", "--store", url, "--model", "carbon-forecaster-*", "--output", "json", "--plots", plots, "--week", "2021-03-06")
	if code != 0 {
		t.Fatalf("evaluate: exit %d: %s", code, errOut)
	}
	var doc struct {
		Results []struct {
			ModelVersion string              `json:"model_version"`
			Scored       int                 `json:"scored"`
			Metrics      map[string]*float64 `json:"metrics"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(doc.Results) != 2 || doc.Results[0].Scored != 10 || doc.Results[1].Scored != 10 {
		t.Fatalf("results %+v", doc.Results)
	}
	if c := doc.Results[0].Metrics["coverage_d1"]; c == nil || *c != 1 {
		t.Fatalf("coverage_d1 of a ±10 %% interval around an 8 %% error = %v, want 1", c)
	}
	checkPNG(t, filepath.Join(plots, "week-DE-direct-2021-03-06.png"), 1200, 600)
	checkPNG(t, filepath.Join(plots, "comparison-DE-direct.png"), 1200, 600)

	code, out, errOut = run("promote", "--registry", url, "--zone", "DE", "--if-better", "--store", url, "--metric", "mape_d1")
	if code != 0 || !strings.Contains(out, "on 2021-03-06/2021-03-10") || !strings.Contains(out, "promoted, version 1 -> 2") {
		t.Fatalf("promote: exit %d\n%s\n%s", code, out, errOut)
	}
	champ, err := reg.VersionByAlias(ctx, "carbon-forecaster-DE", "champion")
	if err != nil || champ.Version != 2 {
		t.Fatalf("champion %d, %v", champ.Version, err)
	}
	want := map[int64]string{1: "8.00", 2: "4.00"}
	for v, mape := range want {
		mv, err := reg.GetVersion(ctx, "carbon-forecaster-DE", v)
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]string{}
		for _, tg := range mv.Tags {
			tags[tg.Key] = tg.Value
		}
		if tags["eval.mape_d1"] != mape || tags["eval.window"] != "2021-03-06/2021-03-10" || tags["eval.signal"] != "direct" || tags["eval.issues"] != "5" {
			t.Errorf("version %d tags %v", v, tags)
		}
	}
	// Re-running compares version 2 with itself: nothing to do.
	if code, out, errOut := run("promote", "--registry", url, "--zone", "DE", "--if-better", "--store", url); code != 0 || !strings.Contains(out, "already the target") {
		t.Fatalf("second promote: exit %d\n%s\n%s", code, out, errOut)
	}
}

// pgStore starts PostgreSQL and returns a migrated forecast store in a
// database of its own, closed at the test's end, and its URL.
func pgStore(ctx context.Context, t *testing.T) (store.DB, string) {
	t.Helper()
	url := services.StartPostgres(t).Database(t)
	db, err := connect.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db, url
}
