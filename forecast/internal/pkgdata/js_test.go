package pkgdata

import "testing"

// TestParserSubset covers the literal forms the tables use.
func TestParserSubset(t *testing.T) {
	src := "exports.A = exports.B = void 0;\nexports.B = {\n    a1: { medium: [1, 2, 1.5], '2xlarge': [8, 16] },\n    [core_1.X.Y]: 0.64, // note\n    'E2as v4': [core_1.X.Z],\n};\n"
	v, err := Find(src, "exports.B")
	if err != nil {
		t.Fatal(err)
	}
	o := v.(Object)
	if got, want := len(o), 3; got != want {
		t.Fatalf("keys=%d, want %d", got, want)
	}
	fam := o[0].Val.(Object)
	if got, want := fam[1].Key, "2xlarge"; got != want {
		t.Fatalf("key=%q, want %q", got, want)
	}
	if got, want := o[1].Key, "\x00core_1.X.Y"; got != want {
		t.Fatalf("key=%q, want %q", got, want)
	}
	if got := o[2].Val.([]any)[0]; got != Ref("core_1.X.Z") {
		t.Fatalf("value=%v, want a reference", got)
	}
}
