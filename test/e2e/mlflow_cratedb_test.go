//go:build interop

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/cratedb"
	"github.com/carbongate/carbongate/test/services"
)

// crateConn connects to CrateDB at url (a services.CrateDB URL).
func crateConn(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// crateLayout describes the registry tables of schema: per table its
// primary key columns and its columns with their types, e.g.
// "pk(workspace,name) [name text, ...]".
func crateLayout(t testing.TB, c *pgx.Conn, schema string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range []string{"registered_models", "model_versions", "registered_model_tags", "model_version_tags", "registered_model_aliases"} {
		pk := crateStrings(t, c, `SELECT column_name FROM information_schema.key_column_usage WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
		cols := crateStrings(t, c, `SELECT column_name || ' ' || data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, schema, table)
		out[table] = fmt.Sprintf("pk(%s) [%s]", strings.Join(pk, ","), strings.Join(cols, ", "))
	}
	return out
}

// crateStrings runs a query whose rows are one string each.
func crateStrings(t testing.TB, c *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// crateRegistryURI is carbongate's --registry for a services.CrateDB URL
// (crate:// selects the CrateDB store; it speaks the PostgreSQL protocol).
func crateRegistryURI(url string) string {
	return "crate://" + strings.TrimPrefix(url, "postgres://")
}

// schemaOf is the schema (database) of a services.CrateDB URL.
func schemaOf(url string) string {
	s := url[strings.LastIndex(url, "/")+1:]
	s, _, _ = strings.Cut(s, "?")
	return s
}

// TestMLflowCrateDBSharesRegistry: the seed's stack. A real MLflow server
// (mlflow-cratedb) keeps its registry in CrateDB, artifacts in SeaweedFS.
// carbongate refuses the tables mlflow-cratedb creates (their primary keys
// lead with workspace); the rows are moved with
// registry/cratedb/convert-mlflow-cratedb.sql into tables carbongate's
// Migrate created, and then MLflow and carbongate share them: a version
// MLflow writes is served by carbongate, a version carbongate writes and
// the champion alias it moves are returned by MLflow's REST API.
func TestMLflowCrateDBSharesRegistry(t *testing.T) {
	bin := services.GoBuild(t, "carbongate", "carbonctl")
	w := services.StartWeed(t)
	bucket := w.Bucket(t)
	crate := services.StartCrateDB(t)
	src1, _ := trainDE(t, bin, w, bucket, "models/de-1", "2021-01-01T00:00:00Z")
	src2, _ := trainDE(t, bin, w, bucket, "models/de-2", "2020-10-01T00:00:00Z")
	const name = "carbon-forecaster-DE"

	// 1. mlflow-cratedb on a fresh schema creates its own tables; MLflow
	// writes version 1 and points champion at it.
	oldURL := crate.Schema(t)
	mf := services.StartMLflow(t, services.MLflowOpts{BackendURI: crate.MLflowURI(oldURL), S3: w, Bucket: bucket, Prefix: "mlartifacts"})
	call(t, mf.URL, "POST", "registered-models/create", "", map[string]any{"name": name, "tags": []any{map[string]any{"key": "zone", "value": "DE"}}})
	call(t, mf.URL, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src1, "tags": []any{map[string]any{"key": "signal", "value": "lifecycle"}}})
	call(t, mf.URL, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "1"})
	c := crateConn(t, crate.URL("doc"))
	mlflowLayout := crateLayout(t, c, schemaOf(oldURL))

	// 2. carbongate refuses that layout, naming the key it needs.
	ctx := context.Background()
	_, err := cratedb.Open(ctx, oldURL, registry.Options{})
	if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "workspace") || !strings.Contains(err.Error(), cratedb.ConvertHint) {
		t.Fatalf("Open on mlflow-cratedb's tables: %v, want EINVALID naming the workspace key and the conversion", err)
	}
	t.Logf("carbongate on mlflow-cratedb's tables: %v", err)

	// 3. The documented move: carbonctl registry migrate on a new schema,
	// then the conversion script.
	newURL := crate.Schema(t)
	crateURI := crateRegistryURI(newURL)
	ctl(t, bin, nil, "registry", "migrate", "--registry", crateURI)
	carbongateLayout := crateLayout(t, c, schemaOf(newURL))
	for table, l := range mlflowLayout {
		t.Logf("%s\n  mlflow-cratedb: %s\n  carbongate:     %s", table, l, carbongateLayout[table])
	}
	script, err := os.ReadFile(filepath.Join(services.RepoRoot(t), "registry", "cratedb", "convert-mlflow-cratedb.sql"))
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the second run adds no rows.
	for range 2 {
		for _, stmt := range strings.Split(stripComments(string(script)), ";") {
			stmt = strings.TrimSpace(stmt)
			if stmt == "" {
				continue
			}
			stmt = strings.NewReplacer(`"mlflow".`, pgx.Identifier{schemaOf(oldURL)}.Sanitize()+".",
				`"carbongate".`, pgx.Identifier{schemaOf(newURL)}.Sanitize()+".").Replace(stmt)
			if _, err := c.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	for _, table := range []string{"registered_models", "model_versions", "registered_model_tags", "model_version_tags", "registered_model_aliases"} {
		count := func(url string) string {
			return fmt.Sprint(crateStrings(t, c, `SELECT count(*)::TEXT FROM `+pgx.Identifier{schemaOf(url), table}.Sanitize()))
		}
		if o, n := count(oldURL), count(newURL); o != "[1]" || n != o {
			t.Fatalf("%s: %s rows copied from %s, want [1]", table, n, o)
		}
	}
	mf.Kill()

	// 4. MLflow and carbongate share the converted tables.
	mf = services.StartMLflow(t, services.MLflowOpts{BackendURI: crate.MLflowURI(newURL), S3: w, Bucket: bucket, Prefix: "mlartifacts"})
	if got := crateLayout(t, c, schemaOf(newURL)); fmt.Sprint(got) != fmt.Sprint(carbongateLayout) {
		t.Fatalf("mlflow-cratedb changed the tables Migrate created:\n%v\nwas\n%v", got, carbongateLayout)
	}
	env := []string{"AWS_ENDPOINT_URL=" + w.Endpoint, "AWS_ACCESS_KEY_ID=" + w.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + w.SecretKey, "AWS_REGION=" + w.Region}
	base := startGateway(t, bin, crateURI, env, "--artifact-sources", "s3://"+bucket)
	hc := &http.Client{Timeout: 10 * time.Second}
	waitVersion(t, hc, base, "1", 20*time.Second)
	got := call(t, base, "GET", "model-versions/get?name="+name+"&version=1", "", nil)
	if mv, _ := got["model_version"].(map[string]any); mv["source"] != src1 || fmt.Sprint(mv["tags"]) != "[map[key:signal value:lifecycle]]" {
		t.Fatalf("carbongate serves converted version 1 as %v, want source %s and tag signal=lifecycle", got, src1)
	}

	// (a) MLflow writes version 2 and moves champion; carbongate serves it.
	v := call(t, mf.URL, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src2})
	if mv, _ := v["model_version"].(map[string]any); mv["version"] != "2" {
		t.Fatalf("MLflow created %v, want version 2", v)
	}
	call(t, mf.URL, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "2"})
	waitVersion(t, hc, base, "2", 20*time.Second)

	// (b) carbongate writes version 3 and moves champion; MLflow returns it.
	v = call(t, base, "POST", "model-versions/create", "", map[string]any{"name": name, "source": src1})
	if mv, _ := v["model_version"].(map[string]any); mv["version"] != "3" {
		t.Fatalf("carbongate created %v, want version 3", v)
	}
	call(t, base, "POST", "registered-models/alias", "", map[string]any{"name": name, "alias": "champion", "version": "3"})
	mlflowSeesChampion(t, mf.URL, name, "3", src1, 3)
	waitVersion(t, hc, base, "3", 10*time.Second)
}

// stripComments drops "--" comment lines.
func stripComments(s string) string {
	var keep []string
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}
