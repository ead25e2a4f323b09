package hold

import (
	"time"

	"github.com/carbongate/carbongate/models/ledger"
)

// Shadow mode: the webhook decides and annotates a workload as it would
// hold it (the decision annotations, the provenance, the promised saving)
// but does not hold, suspend, gate or pin it, and marks it
// AnnotationShadow and Label=Shadow: the controller never holds it, but
// keeps its ledger (what enforcing would have avoided, ledger.Shadow).
const (
	// NamespaceModeLabel on a namespace says how its workloads are held:
	// ModeShadow (which also opts the namespace in) or ModeEnforce; absent,
	// the webhook's default (carbongate --hold-mode).
	NamespaceModeLabel = "carbongate.io/mode"
	ModeEnforce        = "enforce"
	ModeShadow         = "shadow"
	// AnnotationShadow ("true") marks a decision made in shadow mode: the
	// workload ran as submitted.
	AnnotationShadow = "carbongate.io/shadow"
)

// Shadowed returns w (read from a workload with annotations a, its times
// in the clock decisions are made in) as the ledger accounts it: for a
// shadow decision, what enforcing it would have avoided (ledger.Shadow,
// from the decided release time); otherwise w. An error names the
// annotation that does not parse.
func Shadowed(w ledger.Workload, a map[string]string) (ledger.Workload, error) {
	w.Mode = Mode(a)
	if w.Mode != ModeShadow {
		return w, nil
	}
	d, err := Parse(a)
	if err != nil {
		return ledger.Workload{}, err
	}
	return ledger.Shadow(w, d.ReleaseAt()), nil
}

// Accountable returns w — read from a workload annotated a, its times the
// API's wall times — as the ledger accounts it: its admission, start and
// end read in the clock decisions are made in by at (a replay's differs
// from the wall; zero times stay zero), then Shadowed. An error names the
// annotation that does not parse.
func Accountable(w ledger.Workload, a map[string]string, at func(time.Time) time.Time) (ledger.Workload, error) {
	for _, t := range []*time.Time{&w.AdmittedAt, &w.Started, &w.Ended} {
		if !t.IsZero() {
			*t = at(*t)
		}
	}
	return Shadowed(w, a)
}
