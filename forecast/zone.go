package forecast

import (
	"fmt"
	"strings"
)

// Zone is an Electricity Maps zone id such as "DE" or "US-CAL-CISO".
type Zone string

// ParseZone validates a zone id: 1 to 64 characters of A–Z, 0–9 and '-',
// case-insensitive on input, upper-case on output.
func ParseZone(s string) (Zone, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if u == "" || len(u) > 64 {
		return "", Errorf(EINVALID, "zone id %q must be 1 to 64 characters", Clip(s, 64))
	}
	for _, r := range u {
		if !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return "", Errorf(EINVALID, "zone id %q may hold only letters, digits and '-'", Clip(s, 64))
		}
	}
	return Zone(u), nil
}

// Signal is the kind of grid carbon intensity.
type Signal string

// Signals: lifecycle (default) counts life-cycle emissions of the generation
// mix, direct counts only combustion at the plant.
const (
	SignalLifecycle Signal = "lifecycle"
	SignalDirect    Signal = "direct"
)

// Signals lists the supported signals.
var Signals = [...]Signal{SignalLifecycle, SignalDirect}

// SignalMarginal is the marginal operating emissions rate (WattTime's
// co2_moer): the intensity of the generators that answer a change of load,
// CO2 only. It is not in Signals: no model forecasts it; a vendor's
// forecast does where one is configured.
const SignalMarginal Signal = "marginal"

// ParseAnySignal is ParseSignal that also accepts marginal.
func ParseAnySignal(s string) (Signal, error) {
	if sig, err := ParseSignal(s); err == nil {
		return sig, nil
	}
	if Signal(strings.ToLower(strings.TrimSpace(s))) == SignalMarginal {
		return SignalMarginal, nil
	}
	return "", FieldErrorf(EINVALID, "signal", "signal %q is not one of lifecycle, direct, marginal", s)
}

// ParseSignal parses a signal name; "" yields the default, lifecycle.
func ParseSignal(s string) (Signal, error) {
	switch Signal(strings.ToLower(strings.TrimSpace(s))) {
	case "", SignalLifecycle:
		return SignalLifecycle, nil
	case SignalDirect:
		return SignalDirect, nil
	}
	return "", Errorf(EINVALID, "signal %q is not one of lifecycle, direct", s)
}

// Source tells which step of the fallback chain produced a forecast.
type Source string

// The steps of the fallback chain, best first.
const (
	SourceZone        Source = "zone"
	SourceGeneric     Source = "generic"
	SourceBaseline    Source = "baseline"
	SourceClimatology Source = "climatology"
	// SourceVendor is a vendor's own forecast (Electricity Maps,
	// WattTime); Provenance.Vendor names the vendor. Its place in the
	// chain is configurable.
	SourceVendor Source = "vendor"
)

func (s Source) String() string { return string(s) }

// String implements fmt.Stringer.
func (z Zone) String() string { return string(z) }

var _ fmt.Stringer = Zone("")
