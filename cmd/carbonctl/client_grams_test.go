package main

import (
	"encoding/json"
	"fmt"
	"github.com/carbongate/carbongate/gateway/api"
	"github.com/carbongate/carbongate/test/apitest"
	"strings"
	"testing"
)

// TestScheduleCommandGrams: with the job's power the table has each
// window's grams and the saving in grams, as carbongate answered them;
// without it, none; a bad power figure is carbongate's 400 naming it.
func TestScheduleCommandGrams(t *testing.T) {
	t.Parallel()
	url := apitest.ServeBundled(t)
	args := []string{"schedule", "--url", url, "--zones", "DE,SE,PL", "--duration", "3h", "--deadline", "2021-06-03T00:00:00Z"}
	power := append(args[:len(args):len(args)], "--instance-type", "m5.large", "--embodied")

	code, out, errs := runCtl(t, append(power, "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var d api.Schedule
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Decision.EmissionsG == nil || d.Baseline == nil || d.Baseline.EmissionsG == nil ||
		d.SavingsPct == nil || d.SavingsG == nil || d.EmbodiedG == nil {
		t.Fatalf("answer without grams (%v):\n%s", err, out)
	}

	code, out, errs = runCtl(t, power...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.Contains(lines[0], "CO2e g") {
		t.Fatalf("no grams column:\n%s", out)
	}
	want := map[string]string{
		"decision": fmt.Sprintf("%.1f", *d.Decision.EmissionsG),
		"run now":  fmt.Sprintf("%.1f", *d.Baseline.EmissionsG),
	}
	for label, g := range want {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, label) && strings.Contains(l, " "+g+" ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q row with %s g:\n%s", label, g, out)
		}
	}
	for _, s := range []string{
		fmt.Sprintf("saving over running now: %.1f%%, %.1f g CO2e", *d.SavingsPct, *d.SavingsG),
		"job power: 8.378 W (aws m5.large at 50% CPU)",
		fmt.Sprintf("embodied emissions: %.1f g CO2e", *d.EmbodiedG),
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}

	code, out, errs = runCtl(t, args...)
	if code != 0 || strings.Contains(out, "CO2e g") || strings.Contains(out, "g CO2e") || strings.Contains(out, "job power") {
		t.Fatalf("without power: exit %d, %s%s; want no grams", code, out, errs)
	}
	// A power the gateway refuses is refused before it is sent (exit 2);
	// one the gateway refuses for reasons of its own is its 400 (exit 1).
	code, _, errs = runCtl(t, append(args[:len(args):len(args)], "--power-watts", "-5")...)
	if code != 2 || !strings.Contains(errs, "--power-watts must be") {
		t.Fatalf("negative power: exit %d, %s; want 2 naming --power-watts", code, errs)
	}
	code, _, errs = runCtl(t, append(args[:len(args):len(args)], "--power-watts", "5", "--utilization", "0.5")...)
	if code != 1 || !strings.Contains(errs, "for utilization:") {
		t.Fatalf("power with utilization: exit %d, %s; want 1 naming utilization", code, errs)
	}
}
