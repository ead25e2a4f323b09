package hold

import "github.com/carbongate/carbongate/models/ledger"

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
