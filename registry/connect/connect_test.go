package connect

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models"
	"github.com/carbongate/carbongate/registry"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in, addr string
		kind     Kind
		code     string
	}{
		{in: "postgres://u:p@db:5432/mlflow", kind: Postgres, addr: "postgres://u:p@db:5432/mlflow"},
		{in: "postgresql://db/mlflow", kind: Postgres, addr: "postgresql://db/mlflow"},
		{in: "crate://crate@db:5432/doc", kind: CrateDB, addr: "postgres://crate@db:5432/doc"},
		{in: "file:reg.db", kind: Embedded, addr: "reg.db"},
		{in: "file:///var/lib/carbongate/reg.db", kind: Embedded, addr: "/var/lib/carbongate/reg.db"},
		{in: "reg.db", kind: Embedded, addr: "reg.db"},
		{in: "http://carbongate:8080", kind: MLflow, addr: "http://carbongate:8080"},
		{in: "https://mlflow.example.com", kind: MLflow, addr: "https://mlflow.example.com"},
		{in: "", code: forecast.EINVALID},
		{in: "mysql://u:secret@db/x", code: forecast.EINVALID},
	} {
		kind, addr, err := Parse(tt.in)
		if forecast.ErrorCode(err) != tt.code || kind != tt.kind || addr != tt.addr {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q, code %q", tt.in, kind, addr, err, tt.kind, tt.addr, tt.code)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q): error shows the password: %v", tt.in, err)
		}
	}
}

func TestOpenEmbedded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "reg.db")
	s, kind, err := Open(context.Background(), "file:"+path, registry.Options{})
	if err != nil || kind != Embedded {
		t.Fatalf("Open: %v %v", kind, err)
	}
	defer s.Close()
	if _, err := s.CreateModel(context.Background(), models.ZoneModelName("DE"), "", nil); err != nil {
		t.Fatal(err)
	}
	if kind, err := Migrate(context.Background(), path); err != nil || kind != Embedded {
		t.Fatalf("Migrate: %v %v", kind, err)
	}
}
