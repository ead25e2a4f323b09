package vendors_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/gateway/vendors"
)

// TestList: Find names every vendor of the list when a name is unknown;
// each vendor says whether its settings ask for feeds and whether those
// settings also serve its forecasts.
func TestList(t *testing.T) {
	em := &vendors.ElectricityMaps{Zones: "DE", Signals: "lifecycle"}
	wt := &vendors.WattTime{}
	list := []vendors.Vendor{em, wt}
	if v, err := vendors.Find(list, "watttime"); err != nil || v != wt {
		t.Fatalf("Find(watttime) = %v, %v", v, err)
	}
	if _, err := vendors.Find(list, "acme"); err == nil || err.Error() != `--vendor-forecast "acme" is not one of electricitymaps, watttime` {
		t.Fatalf("Find(acme): %v", err)
	}
	if !em.Polls() || em.FeedsForecast() || wt.Polls() || !wt.FeedsForecast() {
		t.Fatalf("polls: em %v/%v, wt %v/%v", em.Polls(), em.FeedsForecast(), wt.Polls(), wt.FeedsForecast())
	}
}

// TestSettingsErrors: each bad setting is refused naming its flag, before
// any call.
func TestSettingsErrors(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		note string
		v    vendors.Vendor
		want string
	}{
		{"em without token", &vendors.ElectricityMaps{Zones: "DE", Signals: "lifecycle"}, "--ingest-zones needs an Electricity Maps token"},
		{"em bad zone", &vendors.ElectricityMaps{Zones: "DE,", Signals: "lifecycle", Token: "t"}, "--ingest-zones"},
		{"em bad signal", &vendors.ElectricityMaps{Zones: "DE", Signals: "green", Token: "t"}, "--ingest-signals"},
		{"wt without credentials", &vendors.WattTime{Regions: "US-CAL-CISO=CAISO_NORTH"}, "needs WattTime credentials"},
		{"wt pair", &vendors.WattTime{User: "u", Password: "p", Regions: "US-CAL-CISO"}, "is not ZONE=REGION"},
		{"wt twice", &vendors.WattTime{User: "u", Password: "p", Regions: "DE=A,DE=B"}, "zone DE is listed twice"},
	} {
		if _, err := tc.v.Feeds(nil, log); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.note, err, tc.want)
		}
	}
	if _, err := (&vendors.WattTime{User: "u", Password: "p"}).Forecasts(0, 0, nil, log); err == nil || !strings.Contains(err.Error(), "needs --watttime-regions") {
		t.Errorf("wt forecasts without regions: %v", err)
	}
	if _, err := (&vendors.ElectricityMaps{Token: "t"}).Forecasts(3, 0, nil, log); err == nil || !strings.Contains(err.Error(), "--vendor-horizon 3") {
		t.Errorf("em horizon 3: %v", err)
	}
}
