package forecast

import (
	"strings"
	"testing"
)

func TestRedactURI(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:secret@db:5432/x?sslmode=disable&password=secret": "postgres://db:5432/x",
		"crate://crate:secret@db/doc":                                   "crate://db/doc",
		"postgres://db/x":                                               "postgres://db/x",
		"host=db password=secret":                                       "(not shown: not a URL)",
		"%zz://secret":                                                  "(not shown: not a URL)",
	} {
		got := RedactURI(in)
		if got != want || strings.Contains(got, "secret") {
			t.Errorf("RedactURI(%q) = %q, want %q", in, got, want)
		}
	}
}
