package httpapi

import (
	"github.com/carbongate/carbongate/gateway/api"
	"net/http"
	"strings"
)

// preferMinimal reports whether the request asks for the minimal answer
// with the preference return=minimal (RFC 7240) in a Prefer header:
// preferences are separated by commas, may carry parameters after ";",
// and the value may be quoted; names and values are compared without
// regard to case.
func preferMinimal(h http.Header) bool {
	for _, v := range h.Values("Prefer") {
		for pref := range strings.SplitSeq(v, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, val, ok := strings.Cut(pref, "=")
			if ok && strings.EqualFold(strings.TrimSpace(name), "return") &&
				strings.EqualFold(strings.Trim(strings.TrimSpace(val), `"`), "minimal") {
				return true
			}
		}
	}
	return false
}

// appendScheduleMinimal appends the minimal answer to a scheduling
// request (Prefer: return=minimal) to dst: the members of b's full answer
// a caller needs to act on the decision — decision, savings_pct,
// savings_g, provenance with only each zone's source, and request_id — each with the
// value it has in the full answer, then a newline. Like appendSchedule it
// writes what encoding/json would (a test checks it).
func appendScheduleMinimal(dst []byte, b *scheduleBody) ([]byte, error) {
	e := encoder{b: dst}
	e.raw(`{"decision":`)
	e.placement(&b.Decision)
	e.optFloat(`,"savings_pct":`, b.SavingsPct)
	e.optFloat(`,"savings_g":`, b.SavingsG)
	e.raw(`,"provenance":`)
	e.provenance(b.Provenance, func(p api.Provenance) {
		e.raw(`{"source":`)
		e.str(p.Source)
		e.raw("}")
	})
	e.raw(`,"request_id":`)
	e.str(b.RequestID)
	e.raw("}\n")
	return e.b, e.err
}
