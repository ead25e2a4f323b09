// Package hold is the contract between carbongate's admission webhook,
// which decides where and when a Kubernetes workload runs and holds it, and
// its controller, which releases it at the decided time: the label,
// annotations and scheduling gate both sides read and write. State lives in
// the objects themselves, so a restarted controller resumes exactly.
//
// A held batch/v1 Job is created with spec.suspend true; a held Pod with
// the scheduling gate Gate. Both carry the label Label=Held and the
// decision annotations, signed (sign.go); the controller releases them at ReleaseAt (the
// decided start, or the deadline guard ReleaseBy = deadline − duration if
// that is earlier), then sets Label=Released and AnnotationReleasedAt.
package hold

import (
	"encoding/json"
	"fmt"
	"time"
)

// Opt-in, inputs and defaults.
const (
	// NamespaceLabel set to NamespaceEnabled on a namespace holds every
	// Job and bare Pod created in it.
	NamespaceLabel   = "carbongate.io/schedule"
	NamespaceEnabled = "enabled"
	// AnnotationMaxDelay on an opted-in namespace bounds how long its
	// workloads without a deadline may wait (an ISO 8601 or Go duration).
	AnnotationMaxDelay = "carbongate.io/max-delay"
	// AnnotationDeadline on a Job or Pod opts it in (in any namespace) and
	// says by when it must finish: an RFC 3339 time.
	AnnotationDeadline = "carbongate.io/deadline"
	// AnnotationDuration says how long the workload runs (ISO 8601 or Go
	// syntax); absent: spec.activeDeadlineSeconds, else the webhook's
	// default.
	AnnotationDuration = "carbongate.io/duration"
	// AnnotationPowerWatts is the workload's average power draw, for the
	// grams of CO2 its shift avoids (optional).
	AnnotationPowerWatts = "carbongate.io/power-watts"
)

// What the webhook writes and the controller reads.
const (
	// Label marks a workload carbongate holds (Held), held (Released) or
	// decided in shadow mode (Shadow); the controller watches only objects
	// carrying it.
	Label    = "carbongate.io/hold"
	Held     = "held"
	Released = "released"
	// Shadow marks a workload decided in shadow mode (ModeShadow): never
	// held, watched only for the ledger.
	Shadow = "shadow"
	// Gate is the scheduling gate of a held Pod.
	Gate = "carbongate.io/hold"

	AnnotationRegion     = "carbongate.io/scheduling-region"
	AnnotationZone       = "carbongate.io/scheduling-zone"
	AnnotationStart      = "carbongate.io/scheduling-time"
	AnnotationReleaseBy  = "carbongate.io/release-by"
	AnnotationSavingsPct = "carbongate.io/savings-pct"
	// AnnotationAvoidedGrams is the CO2 the decision avoids against running
	// at once in the cluster's region, in grams (gCO2eq), when the workload
	// declares its power (AnnotationPowerWatts).
	AnnotationAvoidedGrams = "carbongate.io/avoided-g"
	// AnnotationBaselineZone is the grid zone the promise
	// (AnnotationSavingsPct, AnnotationAvoidedGrams) runs against: where
	// running at once would have run (the cluster's region's zone, else
	// the first candidate). The ledger charges its run at admission there.
	// Absent on decisions made before it existed: the decided zone.
	AnnotationBaselineZone = "carbongate.io/baseline-zone"
	// AnnotationEstimatedPower is the average power in watts carbongate
	// estimated for a workload that declares none (AnnotationPowerWatts)
	// from what its pods request: the promise's grams and the ledger use
	// it as they use a declared power.
	AnnotationEstimatedPower = "carbongate.io/estimated-power-watts"
	AnnotationReleasedAt     = "carbongate.io/released-at"
	// AnnotationReleaseReason says why the controller released: one of
	// the Reason values.
	AnnotationReleaseReason = "carbongate.io/release-reason"
)

// Why a workload was released.
const (
	ReasonScheduled = "scheduled"      // at the decided start
	ReasonGuard     = "deadline-guard" // at deadline − duration, before the decided start
	ReasonManual    = "manual"         // someone unsuspended or ungated it
	ReasonInvalid   = "invalid"        // its decision did not parse or verify (Signer): released at once
)

// RegionLabel is the well-known node label of a node's cloud region.
const RegionLabel = "topology.kubernetes.io/region"

// Decision is the decision annotations of a held workload.
type Decision struct {
	Region    string    // "" when the cluster has no region labels
	Zone      string    // grid zone of Region
	Start     time.Time // decided start
	ReleaseBy time.Time // deadline − duration: released by then whatever happens
}

// ReleaseAt is when the workload is released: Start, or ReleaseBy when
// that is earlier.
func (d Decision) ReleaseAt() time.Time {
	if d.ReleaseBy.Before(d.Start) {
		return d.ReleaseBy
	}
	return d.Start
}

// Reason is why a release at ReleaseAt happens.
func (d Decision) Reason() string {
	if d.ReleaseBy.Before(d.Start) {
		return ReasonGuard
	}
	return ReasonScheduled
}

// Annotations returns d as annotations.
func (d Decision) Annotations() map[string]string {
	a := map[string]string{
		AnnotationZone:      d.Zone,
		AnnotationStart:     d.Start.UTC().Format(time.RFC3339),
		AnnotationReleaseBy: d.ReleaseBy.UTC().Format(time.RFC3339),
	}
	if d.Region != "" {
		a[AnnotationRegion] = d.Region
	}
	return a
}

// Parse reads the decision annotations; an error names the annotation.
func Parse(annotations map[string]string) (Decision, error) {
	d := Decision{Region: annotations[AnnotationRegion], Zone: annotations[AnnotationZone]}
	var err error
	if d.Start, err = parseTime(annotations, AnnotationStart); err != nil {
		return Decision{}, err
	}
	if d.ReleaseBy, err = parseTime(annotations, AnnotationReleaseBy); err != nil {
		return Decision{}, err
	}
	return d, nil
}

func parseTime(a map[string]string, key string) (time.Time, error) {
	v, ok := a[key]
	if !ok {
		return time.Time{}, fmt.Errorf("annotation %s: missing", key)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("annotation %s: %q is not an RFC 3339 time", key, v)
	}
	return t.UTC(), nil
}

// DecidedDuration is the run time of the decision on annotations a: its
// provenance's window.
func DecidedDuration(a map[string]string) (time.Duration, error) {
	var p struct{ Start, End time.Time }
	if err := json.Unmarshal([]byte(a[AnnotationProvenance]), &p); err != nil || !p.End.After(p.Start) {
		return 0, fmt.Errorf("annotation %s has no decided window", AnnotationProvenance)
	}
	return p.End.Sub(p.Start), nil
}
