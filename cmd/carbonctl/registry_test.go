package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/labstack/echo/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/serve/servetest"
	"github.com/carbongate/carbongate/registry"
	"github.com/carbongate/carbongate/registry/embedded"
	"github.com/carbongate/carbongate/registry/mlflowapi"
)

// modelDirs writes a DE and a generic model directory.
func modelDirs(t *testing.T) (de, generic string) {
	t.Helper()
	root := t.TempDir()
	de, generic = filepath.Join(root, "DE"), filepath.Join(root, "generic")
	servetest.Save(t, de, servetest.Ridge(t, "carbon-forecaster-DE", "DE", 0))
	servetest.Save(t, generic, servetest.Ridge(t, "carbon-forecaster-generic", "", 1))
	return de, generic
}

// TestRegisterPromoteEmbedded: register stores the files next to an
// embedded registry and creates versions 1 and 2 with their tags; promote
// moves champion between them.
func TestRegisterPromoteEmbedded(t *testing.T) {
	de, generic := modelDirs(t)
	reg := filepath.Join(t.TempDir(), "registry.db")
	var got []registerResult
	for _, args := range [][]string{
		{"--zone", "DE", "--model-dir", de, "--alias", "champion"},
		{"--zone", "DE", "--model-dir", de},
		{"--zone", "generic", "--model-dir", generic},
	} {
		code, out, errOut := run(append([]string{"register", "--registry", reg}, args...)...)
		if code != 0 {
			t.Fatalf("register %q: exit %d: %s", args, code, errOut)
		}
		var r registerResult
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		got = append(got, r)
	}
	if got[0].Version != "1" || got[1].Version != "2" || got[2].Name != "carbon-forecaster-generic" || got[0].Alias != "champion" {
		t.Fatalf("results %+v", got)
	}
	if _, err := os.Stat(filepath.Join(got[1].Source, "MLmodel")); err != nil || !strings.HasPrefix(got[1].Source, filepath.Dir(reg)) {
		t.Fatalf("version 2 source %q: %v", got[1].Source, err)
	}
	code, out, errOut := run("promote", "--registry", reg, "--zone", "DE", "--version", "2")
	if code != 0 || !strings.Contains(out, "carbon-forecaster-DE@champion: version 1 -> 2") {
		t.Fatalf("promote: exit %d %q %s", code, out, errOut)
	}
	s, err := embedded.Open(reg, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.VersionByAlias(context.Background(), "carbon-forecaster-DE", "champion")
	if err != nil || v.Version != 2 {
		t.Fatalf("champion %+v %v", v, err)
	}
	tags := map[string]string{}
	for _, tg := range v.Tags {
		tags[tg.Key] = tg.Value
	}
	if tags["zone"] != "DE" || tags["signal"] != "lifecycle" || tags["lookback"] != "48" {
		t.Fatalf("version tags %v", tags)
	}
}

func TestRegisterPromoteErrors(t *testing.T) {
	de, _ := modelDirs(t)
	reg := filepath.Join(t.TempDir(), "registry.db")
	for _, tt := range []struct {
		note string
		args []string
		code int
		want string
	}{
		{"no zone", []string{"register", "--registry", reg, "--model-dir", de}, 2, "--zone and --model-dir are required"},
		{"zone mismatch", []string{"register", "--registry", reg, "--zone", "SE", "--model-dir", de}, 2, `model of zone "DE", not SE`},
		{"reserved alias", []string{"register", "--registry", reg, "--zone", "DE", "--model-dir", de, "--alias", "latest"}, 2, "reserved"},
		{"missing dir", []string{"register", "--registry", reg, "--zone", "DE", "--model-dir", filepath.Join(de, "none")}, 1, "--model-dir"},
		{"postgres without artifacts", []string{"register", "--registry", "postgres://127.0.0.1:1/x", "--zone", "DE", "--model-dir", de}, 2, "--artifacts is required"},
		{"bad version", []string{"promote", "--registry", reg, "--zone", "DE", "--version", "v2"}, 2, "--version"},
		{"missing version", []string{"promote", "--registry", reg, "--zone", "DE", "--version", "7"}, 1, "not"},
		{"migrate usage", []string{"registry"}, 2, "registry migrate"},
	} {
		t.Run(tt.note, func(t *testing.T) {
			code, _, errOut := run(tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}

// TestRegisterS3Down: when the artifact store cannot be reached nothing is
// registered: no model, no version.
func TestRegisterS3Down(t *testing.T) {
	de, _ := modelDirs(t)
	reg := filepath.Join(t.TempDir(), "registry.db")
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	code, _, errOut := run("register", "--registry", reg, "--zone", "DE", "--model-dir", de, "--artifacts", "s3://models/registry", "--alias", "champion")
	if code != 1 || !strings.Contains(errOut, "s3") {
		t.Fatalf("exit %d, stderr %q; want a failure naming S3", code, errOut)
	}
	s, err := embedded.Open(reg, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, _, err := s.SearchModels(context.Background(), registry.Search{MaxResults: 10})
	if err != nil || len(ms) != 0 {
		t.Fatalf("models after a failed upload: %+v %v", ms, err)
	}
}

// TestRegisterPromoteOverHTTP: --registry http://… talks MLflow's REST
// API (here carbongate's, over an embedded store) with the token from
// $MLFLOW_TRACKING_TOKEN.
func TestRegisterPromoteOverHTTP(t *testing.T) {
	de, _ := modelDirs(t)
	s, err := embedded.Open(filepath.Join(t.TempDir(), "registry.db"), registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	api, err := mlflowapi.New(mlflowapi.Config{Store: s, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	api.Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()
	arts := t.TempDir()
	t.Setenv("MLFLOW_TRACKING_TOKEN", "wrong")
	if code, _, errOut := run("register", "--registry", srv.URL, "--zone", "DE", "--model-dir", de, "--artifacts", arts); code != 1 || !strings.Contains(errOut, "valid bearer token") {
		t.Fatalf("with a wrong token: exit %d %s", code, errOut)
	}
	t.Setenv("MLFLOW_TRACKING_TOKEN", "tok")
	for range 2 {
		if code, _, errOut := run("register", "--registry", srv.URL, "--zone", "DE", "--model-dir", de, "--artifacts", arts); code != 0 {
			t.Fatalf("register: exit %d %s", code, errOut)
		}
	}
	if code, out, errOut := run("promote", "--registry", srv.URL, "--zone", "DE", "--version", "2"); code != 0 || !strings.Contains(out, "version none -> 2") {
		t.Fatalf("promote: exit %d %q %s", code, out, errOut)
	}
	if v, err := s.VersionByAlias(context.Background(), "carbon-forecaster-DE", "champion"); err != nil || v.Version != 2 {
		t.Fatalf("champion %+v %v", v, err)
	}
}

// TestWhileUnavailable: a registry that answers unavailable (CrateDB's
// shards recovering after a restart) is retried until it answers; any
// other error ends at once.
func TestWhileUnavailable(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	calls := 0
	err := whileUnavailable(context.Background(), &stderr, func(context.Context) error {
		if calls++; calls < 3 {
			return forecast.Errorf(forecast.EUNAVAILABLE, "cratedb get model version: cluster unavailable")
		}
		return nil
	})
	if err != nil || calls != 3 || strings.Count(stderr.String(), "registry unavailable, retrying") != 2 {
		t.Fatalf("err %v after %d calls, stderr %q; want success on the third call after two retries said", err, calls, stderr.String())
	}
	calls = 0
	err = whileUnavailable(context.Background(), &stderr, func(context.Context) error {
		calls++
		return forecast.Errorf(forecast.ENOTFOUND, "no version 9")
	})
	if forecast.ErrorCode(err) != forecast.ENOTFOUND || calls != 1 {
		t.Fatalf("not found: %v after %d calls, want it at once", err, calls)
	}
}
