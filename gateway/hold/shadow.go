package hold

// Shadow mode: the webhook decides and annotates a workload as it would
// hold it (the decision annotations, the provenance, the promised saving)
// but does not hold, suspend, gate or pin it, and marks it
// AnnotationShadow. Such a workload never carries Label, so the
// controller, which watches Label=Held only, never sees it.
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
