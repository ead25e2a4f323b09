package ledger

import "time"

// Shadow returns the workload whose account is what enforcing a shadow
// decision would have avoided. A shadow workload ran as submitted, from
// Started to Ended; held, it would have run from decided for as long. So
// the returned workload's run is [decided, decided + its duration) in its
// zone, and its admission (running at once) is when it really started.
// A workload that has not started is returned as it is (pending, or
// deleted).
func Shadow(w Workload, decided time.Time) Workload {
	if w.Started.IsZero() {
		return w
	}
	s := w
	s.AdmittedAt, s.Started = w.Started, decided
	if !w.Ended.IsZero() {
		s.Ended = decided.Add(w.Ended.Sub(w.Started))
	}
	return s
}
