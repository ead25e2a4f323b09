package connect

import (
	"context"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		uri  string
		kind Kind
		addr string
		code string
	}{
		{uri: "postgres://u@h:5432/db?sslmode=disable", kind: Postgres, addr: "postgres://u@h:5432/db?sslmode=disable"},
		{uri: "postgresql://u@h/db", kind: Postgres, addr: "postgresql://u@h/db"},
		{uri: "crate://crate@h:5432/doc", kind: CrateDB, addr: "postgres://crate@h:5432/doc"},
		{uri: "", code: forecast.EINVALID},
		{uri: "  ", code: forecast.EINVALID},
		{uri: "mysql://u:secret@h/db", code: forecast.EINVALID},
		{uri: "file:/var/lib/store", code: forecast.EINVALID},
		{uri: "h:5432/db", code: forecast.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			t.Parallel()
			kind, addr, err := Parse(tt.uri)
			if tt.code != "" {
				if got := forecast.ErrorCode(err); got != tt.code || forecast.ErrorField(err) != "store" {
					t.Fatalf("Parse(%q) error = %v (code %q, field %q), want %s naming store", tt.uri, err, got, forecast.ErrorField(err), tt.code)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error %q shows the password", err)
				}
				return
			}
			if err != nil || kind != tt.kind || addr != tt.addr {
				t.Fatalf("Parse(%q) = %q, %q, %v; want %q, %q", tt.uri, kind, addr, err, tt.kind, tt.addr)
			}
		})
	}
}

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	// Port 1 on loopback refuses connections at once.
	for _, uri := range []string{"postgres://u@127.0.0.1:1/db?connect_timeout=2", "crate://crate@127.0.0.1:1/doc?connect_timeout=2"} {
		_, err := Open(context.Background(), uri)
		if got := forecast.ErrorCode(err); got != forecast.EUNAVAILABLE {
			t.Fatalf("Open(%s) error = %v (code %q), want %s", uri, err, got, forecast.EUNAVAILABLE)
		}
	}
}
