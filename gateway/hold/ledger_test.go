package hold

import (
	"errors"
	"maps"
	"testing"

	"github.com/carbongate/carbongate/models/ledger"
)

// TestRecordSignVerify: a ledger record verifies for its object only, with
// the controller's key, unchanged; a decision's signature is not a record's.
func TestRecordSignVerify(t *testing.T) {
	t.Parallel()
	g, _ := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	other, _ := NewSigner([]byte("fedcba9876543210fedcba9876543210"))
	job := Subject{Kind: "job", Namespace: "batch", Name: "train"}
	r, b, a := 500.0, 1000.0, 500.0
	rec := RecordOf(ledger.Entry{Status: ledger.Realized, Coverage: 1, RealizedGrams: &r, BaselineGrams: &b, AvoidedGrams: &a})
	if want := map[string]string{AnnotationRealizedStatus: "realized", AnnotationRealizedCoverage: "1.0000",
		AnnotationRealizedGrams: "500.00", AnnotationRunAtAdmissionGrams: "1000.00", AnnotationRealizedAvoided: "500.00"}; !maps.Equal(rec, want) {
		t.Fatalf("record %v, want %v", rec, want)
	}
	rec[AnnotationRecordSignature] = g.SignRecord(job, rec)
	if err := g.VerifyRecord(Subject{Kind: "Job", Namespace: "batch", Name: "train"}, rec); err != nil {
		t.Fatalf("own record: %v", err)
	}
	decision := signedDecision(t, g, job)
	for _, tc := range []struct {
		name string
		s    Subject
		a    func() map[string]string
		g    *Signer
	}{
		{"another name", Subject{Kind: "job", Namespace: "batch", Name: "other"}, func() map[string]string { return maps.Clone(rec) }, g},
		{"another kind", Subject{Kind: "pod", Namespace: "batch", Name: "train"}, func() map[string]string { return maps.Clone(rec) }, g},
		{"another key", job, func() map[string]string { return maps.Clone(rec) }, other},
		{"grams raised", job, func() map[string]string {
			c := maps.Clone(rec)
			c[AnnotationRealizedAvoided] = "5000.00"
			return c
		}, g},
		{"coverage dropped", job, func() map[string]string {
			c := maps.Clone(rec)
			delete(c, AnnotationRealizedCoverage)
			return c
		}, g},
		{"no record", job, func() map[string]string { return map[string]string{} }, g},
		{"a decision's signature", job, func() map[string]string {
			c := maps.Clone(rec)
			c[AnnotationRecordSignature] = decision[AnnotationSignature]
			return c
		}, g},
		{"garbage", job, func() map[string]string {
			c := maps.Clone(rec)
			c[AnnotationRecordSignature] = "!!"
			return c
		}, g},
	} {
		if err := tc.g.VerifyRecord(tc.s, tc.a()); !errors.Is(err, ErrUnsignedRecord) {
			t.Errorf("%s: %v, want ErrUnsignedRecord", tc.name, err)
		}
	}
	// Partial: coverage, no grams.
	p := RecordOf(ledger.Entry{Status: ledger.Partial, Coverage: 0.75})
	if want := map[string]string{AnnotationRealizedStatus: "partial", AnnotationRealizedCoverage: "0.7500"}; !maps.Equal(p, want) {
		t.Errorf("partial record %v, want %v", p, want)
	}
}
