package hold

import (
	"errors"
	"strconv"

	"github.com/carbongate/carbongate/models/ledger"
)

// The ledger record: what the controller writes on a released workload once
// its realized saving is known (package models/ledger computes it), signed
// by the controller with the decision key (AnnotationRecordSignature). The
// webhook strips these from a created object and keeps an update's only
// when they verify, so a user cannot forge a realized saving; the
// controller itself trusts a record only when it verifies.
const (
	// AnnotationRealizedStatus is the final status of the account:
	// realized, partial (AnnotationRealizedCoverage says how much of the
	// run's hours were observed) or no-power.
	AnnotationRealizedStatus = "carbongate.io/realized-status"
	// AnnotationRealizedCoverage is the share of the hours of both windows
	// (the run and running at admission) observed, in [0, 1].
	AnnotationRealizedCoverage = "carbongate.io/realized-coverage"
	// AnnotationRealizedGrams is what the run emitted at observed
	// intensity (gCO2eq), when realized.
	AnnotationRealizedGrams = "carbongate.io/realized-g"
	// AnnotationRunAtAdmissionGrams is what running at admission would
	// have emitted at observed intensity (gCO2eq), when realized.
	AnnotationRunAtAdmissionGrams = "carbongate.io/run-at-admission-g"
	// AnnotationRealizedAvoided is run-at-admission − realized grams
	// (negative when the shift lost), when realized.
	AnnotationRealizedAvoided = "carbongate.io/realized-avoided-g"
	// AnnotationRecordSignature is the controller's HMAC of the record.
	AnnotationRecordSignature = "carbongate.io/realized-signature"
)

// Record are the annotations of the ledger record, the signature last.
var Record = []string{AnnotationRealizedStatus, AnnotationRealizedCoverage, AnnotationRealizedGrams,
	AnnotationRunAtAdmissionGrams, AnnotationRealizedAvoided, AnnotationRecordSignature}

// RecordOf returns the annotations recording e (final: realized, partial
// or no-power), unsigned.
func RecordOf(e ledger.Entry) map[string]string {
	a := map[string]string{
		AnnotationRealizedStatus:   string(e.Status),
		AnnotationRealizedCoverage: strconv.FormatFloat(e.Coverage, 'f', 4, 64),
	}
	for k, v := range map[string]*float64{AnnotationRealizedGrams: e.RealizedGrams,
		AnnotationRunAtAdmissionGrams: e.BaselineGrams, AnnotationRealizedAvoided: e.AvoidedGrams} {
		if v != nil {
			a[k] = strconv.FormatFloat(*v, 'f', 2, 64)
		}
	}
	return a
}

// SignRecord returns the signature of the record annotations of a for s
// (s.Name set): the value of AnnotationRecordSignature.
func (g *Signer) SignRecord(s Subject, a map[string]string) string {
	return g.mac(recordDomain, s.Kind, s.Namespace, s.Name, Record[:len(Record)-1], a)
}

// VerifyRecord checks a's record signature for s; ErrUnsignedRecord when
// there is no record or it does not verify.
func (g *Signer) VerifyRecord(s Subject, a map[string]string) error {
	if _, ok := a[AnnotationRecordSignature]; !ok {
		return ErrUnsignedRecord
	}
	if !g.equal(a[AnnotationRecordSignature], g.SignRecord(s, a)) {
		return ErrUnsignedRecord
	}
	return nil
}

// ErrUnsignedRecord is VerifyRecord's error.
var ErrUnsignedRecord = errors.New("no ledger record signed by carbongate's controller (annotation " + AnnotationRecordSignature + ")")

const recordDomain = "carbongate.io ledger record v1"

// Mode is the mode a workload was decided in: ModeShadow when it carries
// AnnotationShadow, else ModeEnforce.
func Mode(a map[string]string) string {
	if a[AnnotationShadow] == "true" {
		return ModeShadow
	}
	return ModeEnforce
}
