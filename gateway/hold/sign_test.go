package hold

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"
)

func signedDecision(t *testing.T, g *Signer, s Subject) map[string]string {
	t.Helper()
	d := Decision{Region: "swedencentral", Zone: "SE", Start: time.Date(2021, 6, 1, 21, 0, 0, 0, time.UTC), ReleaseBy: time.Date(2021, 6, 2, 0, 0, 0, 0, time.UTC)}
	a := d.Annotations()
	a[AnnotationAvoidedGrams] = "120.5"
	a[AnnotationSignature] = g.Sign(s, a)
	return a
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	g, err := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSigner([]byte("fedcba9876543210fedcba9876543210"))
	job := Subject{Kind: "Job", Namespace: "batch", Name: "train"}
	a := signedDecision(t, g, job)
	if err := g.Verify(job, a); err != nil {
		t.Fatalf("own signature: %v", err)
	}
	if err := g.Verify(Subject{Kind: "job", Namespace: "batch", Name: "train"}, a); err != nil {
		t.Fatalf("kind in lower case: %v", err)
	}
	for _, tc := range []struct {
		name string
		s    Subject
		edit func(map[string]string)
		g    *Signer
	}{
		{"credit raised", job, func(a map[string]string) { a[AnnotationAvoidedGrams] = "+Inf" }, g},
		{"start moved", job, func(a map[string]string) { a[AnnotationStart] = "2021-06-01T01:00:00Z" }, g},
		{"region changed", job, func(a map[string]string) { a[AnnotationRegion] = "eastus" }, g},
		{"a signed field added", job, func(a map[string]string) { a[AnnotationSavingsPct] = "99" }, g},
		{"a signed field removed", job, func(a map[string]string) { delete(a, AnnotationAvoidedGrams) }, g},
		{"no signature", job, func(a map[string]string) { delete(a, AnnotationSignature) }, g},
		{"garbage signature", job, func(a map[string]string) { a[AnnotationSignature] = "not base64!" }, g},
		{"copied to another name", Subject{Kind: "Job", Namespace: "batch", Name: "other"}, func(map[string]string) {}, g},
		{"copied to another namespace", Subject{Kind: "Job", Namespace: "web", Name: "train"}, func(map[string]string) {}, g},
		{"copied to a Pod", Subject{Kind: "Pod", Namespace: "batch", Name: "train"}, func(map[string]string) {}, g},
		{"another key", job, func(map[string]string) {}, other},
	} {
		b := signedDecision(t, g, job)
		tc.edit(b)
		if err := tc.g.Verify(tc.s, b); !errors.Is(err, ErrUnsigned) {
			t.Errorf("%s: Verify = %v, want ErrUnsigned", tc.name, err)
		}
	}
	// generateName: signed for the prefix, verified for the given name.
	gen := signedDecision(t, g, Subject{Kind: "Pod", Namespace: "batch", GenerateName: "render-"})
	if err := g.Verify(Subject{Kind: "Pod", Namespace: "batch", Name: "render-x7k2p", GenerateName: "render-"}, gen); err != nil {
		t.Errorf("generated name: %v", err)
	}
	if err := g.Verify(Subject{Kind: "Pod", Namespace: "batch", Name: "other-x7k2p", GenerateName: "other-"}, gen); err == nil {
		t.Error("another prefix verified")
	}
	if _, err := NewSigner([]byte("short")); err == nil {
		t.Error("a 5-byte key accepted")
	}
}

func TestAvoidedGrams(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"120.5": true, "1e8": true, "0": false, "-5": false, "+Inf": false, "Inf": false, "NaN": false,
		"1e308": false, "1.0000001e8": false, "": false, "many": false, strconv.FormatFloat(math.MaxFloat64, 'g', -1, 64): false,
	} {
		if _, ok := AvoidedGrams(map[string]string{AnnotationAvoidedGrams: v}); ok != want {
			t.Errorf("AvoidedGrams(%q) ok=%v, want %v", v, ok, want)
		}
	}
	if _, ok := AvoidedGrams(nil); ok {
		t.Error("absent: ok")
	}
}
