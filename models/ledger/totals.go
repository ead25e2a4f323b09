package ledger

import (
	"cmp"
	"slices"

	"github.com/carbongate/carbongate/forecast"
)

// Total sums the entries of one namespace and zone. Promised grams are
// summed over every entry that carries a promise; realized grams over
// realized entries only, with PromisedRealized the promise of those same
// entries, so the two compare like for like.
type Total struct {
	Namespace  string        `json:"namespace"`
	Zone       forecast.Zone `json:"zone"`
	Accounting string        `json:"accounting"`
	Mode       string        `json:"mode"`
	Workloads  int           `json:"workloads"`
	// Counts by status.
	Realized int `json:"realized"`
	Partial  int `json:"partial"`
	Pending  int `json:"pending"`
	Deleted  int `json:"deleted"`
	NoPower  int `json:"no_power"`
	// Grams (gCO2eq).
	PromisedGrams    float64 `json:"promised_avoided_g"`
	PromisedRealized float64 `json:"promised_avoided_g_of_realized"`
	RealizedGrams    float64 `json:"realized_g"`
	BaselineGrams    float64 `json:"run_at_admission_g"`
	AvoidedGrams     float64 `json:"realized_avoided_g"`
}

// Totals sums entries per namespace, zone, accounting and mode, in that
// order.
func Totals(entries []Entry) []Total {
	type key struct {
		ns   string
		zone forecast.Zone
		acc  string
		mode string
	}
	idx := map[key]int{}
	var out []Total
	for _, e := range entries {
		k := key{e.Namespace, e.Zone, e.Accounting, e.Mode}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Total{Namespace: e.Namespace, Zone: e.Zone, Accounting: e.Accounting, Mode: e.Mode})
		}
		add(&out[i], e)
	}
	slices.SortFunc(out, func(a, b Total) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Zone, b.Zone), cmp.Compare(a.Accounting, b.Accounting), cmp.Compare(a.Mode, b.Mode))
	})
	return out
}

func add(t *Total, e Entry) {
	t.Workloads++
	if e.HasPromise {
		t.PromisedGrams += e.PromisedGrams
	}
	switch e.Status {
	case Realized:
		t.Realized++
		if e.HasPromise {
			t.PromisedRealized += e.PromisedGrams
		}
		t.RealizedGrams += *e.RealizedGrams
		t.BaselineGrams += *e.BaselineGrams
		t.AvoidedGrams += *e.AvoidedGrams
	case Partial:
		t.Partial++
	case Pending:
		t.Pending++
	case Deleted:
		t.Deleted++
	case NoPower:
		t.NoPower++
	}
}
