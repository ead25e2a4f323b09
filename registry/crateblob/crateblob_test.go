package crateblob_test

import (
	"fmt"
	"testing"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/crateblob"
)

func TestParseURI(t *testing.T) {
	t.Parallel()
	const d = "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct {
		name string
		in   string
		want crateblob.Location
		bad  bool
	}{
		{name: "table", in: "crate+blob://crate:4200/models", want: crateblob.Location{Host: "crate:4200", Table: "models"}},
		{name: "table with slash", in: "crate+blob://crate:4200/models/", want: crateblob.Location{Host: "crate:4200", Table: "models"}},
		{name: "blob", in: "crate+blob://crate:4200/models/" + d, want: crateblob.Location{Host: "crate:4200", Table: "models", Digest: d}},
		{name: "https", in: "crate+blobs://crate:4200/m_1/" + d, want: crateblob.Location{TLS: true, Host: "crate:4200", Table: "m_1", Digest: d}},
		{name: "other scheme", in: "s3://b/models", bad: true},
		{name: "no host", in: "crate+blob:///models", bad: true},
		{name: "no table", in: "crate+blob://crate:4200/", bad: true},
		{name: "upper-case table", in: "crate+blob://crate:4200/Models", bad: true},
		{name: "quote in table", in: `crate+blob://crate:4200/m"x`, bad: true},
		{name: "short digest", in: "crate+blob://crate:4200/models/abc", bad: true},
		{name: "upper-case digest", in: "crate+blob://crate:4200/models/0123456789ABCDEF0123456789abcdef01234567", bad: true},
		{name: "three segments", in: "crate+blob://crate:4200/models/" + d + "/x", bad: true},
		{name: "user info", in: "crate+blob://crate:secret@crate:4200/models", bad: true},
		{name: "query", in: "crate+blob://crate:4200/models?x=1", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := crateblob.ParseURI(tc.in)
			if tc.bad {
				if forecast.ErrorCode(err) != forecast.EINVALID {
					t.Fatalf("ParseURI(%q) = %+v, %v; want EINVALID", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseURI(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back, err := crateblob.ParseURI(got.String()); err != nil || back != got {
				t.Fatalf("round trip of %s: %+v, %v", got, back, err)
			}
		})
	}
}

func TestUnder(t *testing.T) {
	t.Parallel()
	const d = "0123456789abcdef0123456789abcdef01234567"
	blob, _ := crateblob.ParseURI("crate+blob://crate:4200/models/" + d)
	for _, tc := range []struct {
		base string
		want bool
	}{
		{"crate+blob://crate:4200/models", true},
		{"crate+blob://CRATE:4200/models", true},
		{"crate+blob://crate:4200/models/" + d, true},
		{"crate+blob://crate:4200/models/" + crateblob.Digest(nil), false},
		{"crate+blob://crate:4200/models_old", false},
		{"crate+blob://crate:4201/models", false},
		{"crate+blobs://crate:4200/models", false},
	} {
		base, err := crateblob.ParseURI(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		if got := blob.Under(base); got != tc.want {
			t.Errorf("%s under %s = %v, want %v", blob, base, got, tc.want)
		}
	}
}

func ExampleParseURI() {
	l, err := crateblob.ParseURI("crate+blob://crate.db.svc:4200/models/" + crateblob.Digest([]byte("{}")))
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Host, l.Table, l.Digest)
	fmt.Println(l.TableLocation())
	// Output:
	// crate.db.svc:4200 models bf21a9e8fbc5a3846fb05b4fa0859e0917b2202f
	// crate+blob://crate.db.svc:4200/models
}
