package forecast

import (
	"context"
	"errors"
	"fmt"
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

func TestErrorSummary(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&Error{Code: ENOTFOUND, Message: "no artifact directory at /etc/passwd"}, "not found"},
		{&Error{Code: EINVALID, Message: "s3://secret-bucket/x is not allowed"}, "refused as invalid"},
		{fmt.Errorf("fetch /srv/x: %w", context.DeadlineExceeded), "timed out"},
		{errors.New("open /var/lib/x: permission denied"), "internal error"},
	} {
		if got := ErrorSummary(tc.err); got != tc.want {
			t.Errorf("ErrorSummary(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
