package main

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// backfillBumped writes daily DE forecasts of model/version equal to the
// observations, except that each day's cheapest hour is forecast dearer
// than its neighbours by bump: a tiny error that moves the pick.
func backfillBumped(t *testing.T, m store.Forecasts, model, version string, first, last int, bump float64) {
	t.Helper()
	var rows []store.ForecastRow
	for d := first; d < last; d++ {
		issued := evalDay0.AddDate(0, 0, d)
		for h := range 96 {
			at := issued.Add(time.Duration(h) * time.Hour)
			v := evalObserved(at)
			if at.Hour() == 18 { // the sine's trough
				v += bump
			}
			rows = append(rows, store.ForecastRow{Zone: "DE", Signal: forecast.SignalDirect, ModelName: model, ModelVersion: version,
				IssuedAt: issued, TargetTime: at, Value: v, Lower: math.NaN(), Upper: math.NaN()})
		}
	}
	if err := m.WriteForecasts(context.Background(), "test", nil, rows); err != nil {
		t.Fatal(err)
	}
}

// TestPromoteCaptureGate: version 5 forecasts DE almost exactly (better
// MAPE than the champion, version 1, 8 % high throughout) but moves each
// day's trough an hour early, so its 1-hour jobs run at 61.4 instead of
// 60 (capture 38.6/40): the MAPE gate alone promotes it, the capture gate
// can decline it.
func TestPromoteCaptureGate(t *testing.T) {
	t.Parallel()
	m := store.NewMemory()
	observeDE(t, m, 15)
	backfillDE(t, m, "carbon-forecaster-DE", "1", 0, 10, 0.08, 0)
	backfillBumped(t, m, "carbon-forecaster-DE", "5", 0, 10, 3)
	for _, c := range []struct {
		note     string
		args     []string
		code     int
		champion int64
		want     string
	}{
		{"MAPE alone", nil, 0, 5, "promoted, version 1 -> 5"},
		{"capture kept", []string{"--keep-capture", "--shapes", "1h/24h"}, 3, 1, "capture 0.966 against 1.000: not capturing no less than the champion, version 1 stays"},
		{"capture floor met", []string{"--min-capture", "0.95", "--shapes", "1h/24h"}, 0, 5, "promoted"},
		{"capture floor missed", []string{"--min-capture", "0.99", "--shapes", "1h/24h"}, 3, 1, "not capturing at least 0.99"},
	} {
		t.Run(c.note, func(t *testing.T) {
			t.Parallel()
			reg := gateRegistry(t, 5, 1)
			args := append([]string{"--registry", reg, "--zone", "DE", "--if-better", "--store", "postgres://x/y", "--challenger", "5"}, c.args...)
			code, out, errOut := runWith(promoteMem(m), args...)
			if code != c.code || !strings.Contains(out, c.want) {
				t.Fatalf("exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", code, c.code, out, errOut, c.want)
			}
			champ, tags := registryState(t, reg)
			if champ != c.champion {
				t.Fatalf("champion %d, want %d", champ, c.champion)
			}
			if c.args != nil && (tags[1]["eval.capture"] != "1.000" || tags[5]["eval.capture"] != "0.966") {
				t.Fatalf("capture tags %v %v", tags[1], tags[5])
			}
		})
	}
	reg := gateRegistry(t, 5, 1)
	for _, c := range []struct {
		note string
		args []string
		want string
	}{
		{"floor not a share", []string{"--if-better", "--store", "postgres://x/y", "--min-capture", "2"}, "--min-capture"},
		{"shapes alone", []string{"--if-better", "--store", "postgres://x/y", "--shapes", "1h/24h"}, "--shapes"},
		{"bad shapes", []string{"--if-better", "--store", "postgres://x/y", "--keep-capture", "--shapes", "1h"}, "--shapes"},
		{"without if-better", []string{"--version", "5", "--keep-capture"}, "--if-better"},
	} {
		code, _, errOut := runWith(promoteMem(m), append([]string{"--registry", reg, "--zone", "DE"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d (want 2): %s", c.note, code, errOut)
		}
	}
}
