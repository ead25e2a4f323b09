package hold

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// AnnotationSignature is the webhook's HMAC-SHA256 of a held workload's
// decision (see Signer): the controller holds, releases at the decided time
// and credits only workloads whose decision it verifies.
const AnnotationSignature = "carbongate.io/decision-signature"

// Outputs are the annotations only carbongate writes on a Job or Pod: the
// webhook removes them from a created object and puts an updated object's
// back as they were (see gateway/admission), so that nothing downstream
// trusts a value a user wrote. The controller's release stamp
// (AnnotationReleasedAt, AnnotationReleaseReason) and Label are outputs
// too, changed only by a release; so is the ledger record (Record),
// changed only to one the controller signed (VerifyRecord).
var Outputs = []string{
	AnnotationRegion, AnnotationZone, AnnotationStart, AnnotationReleaseBy,
	AnnotationSavingsPct, AnnotationAvoidedGrams, AnnotationSignature,
	AnnotationProvenance, AnnotationUnscheduled, AnnotationShadow, AnnotationCandidates,
	AnnotationBaselineZone, AnnotationEstimatedPower,
}

// ReleaseStamp are the annotations a release writes.
var ReleaseStamp = []string{AnnotationReleasedAt, AnnotationReleaseReason}

// The webhook's other annotations on Jobs and Pods (also written on
// VmTemplates; package admission names them too).
const (
	AnnotationProvenance  = "carbongate.io/provenance"
	AnnotationUnscheduled = "carbongate.io/unscheduled"
)

// signed are the annotations a signature covers, in order: those of a
// decision without candidates, whose place the controller never moves.
var signed = []string{AnnotationRegion, AnnotationZone, AnnotationStart, AnnotationReleaseBy, AnnotationSavingsPct, AnnotationAvoidedGrams}

// signedPlace are the annotations the signature of a decision with
// candidates (AnnotationCandidates) covers: also the candidates and a
// binding's member cluster, which the controller may move among them. It
// is signed in a domain of its own, so that removing the candidates does
// not leave a decision that verifies.
var signedPlace = append(slices.Clone(signed), AnnotationCluster, AnnotationCandidates)

// signedV3 are the annotations the signature of a decision carrying any
// of v3Keys covers: signedPlace and v3Keys, each marked absent when it is
// (mac), so that none can be added or removed. Decisions made before they
// existed have none and verify as they were signed (v1, v2).
var (
	v3Keys   = []string{AnnotationBaselineZone, AnnotationEstimatedPower}
	signedV3 = append(slices.Clone(signedPlace), v3Keys...)
)

// covered returns the domain and the annotations a's signature covers.
func covered(a map[string]string) (string, []string) {
	for _, k := range v3Keys {
		if _, ok := a[k]; ok {
			return v3Domain, signedV3
		}
	}
	if _, ok := a[AnnotationCandidates]; ok {
		return placeDomain, signedPlace
	}
	return decisionDomain, signed
}

// SignedKeys are the annotations of a's signed decision: those its
// signature covers and the signature. The controller re-signs them when it
// moves a hold (a newer forecast); the webhook keeps an update's only when
// they verify.
func SignedKeys(a map[string]string) []string {
	_, keys := covered(a)
	return append(slices.Clone(keys), AnnotationSignature)
}

// MinKeyBytes is the shortest decision key NewSigner accepts.
const MinKeyBytes = 32

// MaxAvoidedGrams bounds the credit of one workload (AnnotationAvoidedGrams):
// a rack's worth of power (100 kW) shifted for a week between grids 1,000
// gCO2eq/kWh apart is 1.7e7 g; anything above 1e8 g (100 t) is not a
// decision carbongate made.
const MaxAvoidedGrams = 1e8

// Subject is the workload a decision is signed for: its kind (Job, Pod),
// namespace and name. A Pod or Job created with metadata.generateName has
// no name at admission: its decision is signed for the prefix
// (GenerateName) and verifies for any name that starts with it.
type Subject struct {
	Kind, Namespace, Name, GenerateName string
}

// Signer signs decisions (the webhook) and verifies them (the controller)
// with a key every replica shares. Safe for concurrent use.
type Signer struct{ key []byte }

// NewSigner returns a Signer with key, at least MinKeyBytes long.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the decision key has %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	return &Signer{key: append([]byte(nil), key...)}, nil
}

// Sign returns the signature of the decision annotations of a for s: the
// value of AnnotationSignature.
func (g *Signer) Sign(s Subject, a map[string]string) string {
	name := s.Name
	if name == "" {
		name = s.GenerateName + "*"
	}
	domain, keys := covered(a)
	return g.mac(domain, s.Kind, s.Namespace, name, keys, a)
}

// ErrUnsigned is Verify's error for a decision without a valid signature.
var ErrUnsigned = errors.New("the decision is not signed by carbongate's webhook (annotation " + AnnotationSignature + ")")

// Verify checks a's signature for s (s.Name set, as stored).
func (g *Signer) Verify(s Subject, a map[string]string) error {
	names := []string{s.Name}
	if s.GenerateName != "" && strings.HasPrefix(s.Name, s.GenerateName) {
		names = append(names, s.GenerateName+"*")
	}
	domain, keys := covered(a)
	for _, n := range names {
		if g.equal(a[AnnotationSignature], g.mac(domain, s.Kind, s.Namespace, n, keys, a)) {
			return nil
		}
	}
	return ErrUnsigned
}

// equal compares a signature as written with the expected one in constant
// time; a malformed one is not equal.
func (g *Signer) equal(got, want string) bool {
	a, err := base64.RawURLEncoding.DecodeString(got)
	if err != nil || len(a) != sha256.Size {
		return false
	}
	b, _ := base64.RawURLEncoding.DecodeString(want)
	return hmac.Equal(a, b)
}

// The domains of decisions: without candidates (v1), with (v2), with the
// promise's baseline zone or an estimated power (v3, see signedV3).
const (
	decisionDomain = "carbongate.io decision v1"
	placeDomain    = "carbongate.io decision v2"
	v3Domain       = "carbongate.io decision v3"
)

// mac is the HMAC of the annotations keys of a in domain (a decision or a
// ledger record), each length-prefixed (and absent ones marked), so no two
// messages are alike.
func (g *Signer) mac(domain, kind, namespace, name string, keys []string, a map[string]string) string {
	h := hmac.New(sha256.New, g.key)
	field := func(s string) { fmt.Fprintf(h, "%d:%s;", len(s), s) }
	field(domain)
	field(strings.ToLower(kind))
	field(namespace)
	field(name)
	for _, k := range keys {
		if v, ok := a[k]; ok {
			field(k)
			field(v)
		} else {
			field("!" + k)
		}
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// AvoidedGrams reads AnnotationAvoidedGrams: ok is false when it is absent,
// not a number, not finite, not positive or above MaxAvoidedGrams.
func AvoidedGrams(a map[string]string) (float64, bool) {
	g, err := strconv.ParseFloat(a[AnnotationAvoidedGrams], 64)
	if err != nil || math.IsNaN(g) || !(g > 0 && g <= MaxAvoidedGrams) {
		return 0, false
	}
	return g, true
}
