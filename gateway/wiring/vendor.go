package wiring

import (
	"slices"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/fallback"
)

// VendorForecaster is a vendor's forecast; *vendorfc.Forecaster
// implements it.
type VendorForecaster interface {
	forecast.Forecaster
	Vendor() string // the vendor's name, which names its step
	// Signals lists the signals the vendor forecasts.
	Signals() []forecast.Signal
	// Serves reports whether the vendor forecasts zone's signal.
	Serves(zone forecast.Zone, signal forecast.Signal) bool
}

// VendorPosition is where the vendor step goes in the chain.
type VendorPosition string

// The positions of the vendor step: before every other step; after the
// last zone-model step (before the generic models); after the last
// generic-model step (before the baseline); after climatology.
const (
	VendorFirst        VendorPosition = "first"
	VendorAfterZone    VendorPosition = "after-zone"
	VendorAfterGeneric VendorPosition = "after-generic"
	VendorLast         VendorPosition = "last"
)

// VendorPositions lists the positions, first to last.
var VendorPositions = []VendorPosition{VendorFirst, VendorAfterZone, VendorAfterGeneric, VendorLast}

// ParseVendorPosition parses a position; "" yields VendorAfterGeneric.
func ParseVendorPosition(s string) (VendorPosition, error) {
	if s == "" {
		return VendorAfterGeneric, nil
	}
	if p := VendorPosition(s); slices.Contains(VendorPositions, p) {
		return p, nil
	}
	return "", forecast.FieldErrorf(forecast.EINVALID, "vendor_position", "vendor position %q is not one of first, after-zone, after-generic, last", s)
}

// insertVendor puts the vendor step into steps at pos.
func insertVendor(steps []fallback.Step, v fallback.Step, pos VendorPosition) []fallback.Step {
	at := 0
	switch pos {
	case VendorFirst:
	case VendorAfterZone, VendorAfterGeneric:
		src := forecast.SourceZone
		if pos == VendorAfterGeneric {
			src = forecast.SourceGeneric
		}
		for i, s := range steps {
			if s.Source == src {
				at = i + 1
			}
		}
	default:
		at = len(steps)
	}
	return slices.Insert(steps, at, v)
}
