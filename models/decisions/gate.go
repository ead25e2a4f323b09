package decisions

import (
	"context"
	"math"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
	"github.com/carbongate/carbongate/models/evaluate"
)

// CaptureGate is what a promotion requires of the challenger's decisions,
// on top of evaluate's error metric.
type CaptureGate struct {
	Shapes []Shape       // nil: DefaultShapes
	Every  time.Duration // 0: DefaultEvery
	Min    float64       // the challenger's capture must be at least this; 0: no floor
	Keep   bool          // the challenger's capture must be at least the champion's
}

// CaptureVerdict is the outcome of CompareCapture.
type CaptureVerdict struct {
	Champion, Challenger float64 // mean capture over the shapes (Report.Capture)
	Issues               int     // decisions replayed per version, summed over shapes
	Pass                 bool    // the challenger meets the gate
}

// CompareCapture replays the decisions of g's champion and challenger
// (model g.Model in the store fs) on the issue times both have forecasts
// for, and checks the challenger against cg. Errors as evaluate.Compare's
// for the selection; EUNAVAILABLE when no decision could be replayed (an
// observation or a forecast hour missing everywhere).
func CompareCapture(ctx context.Context, fs store.Forecasts, obs evaluate.Observations, g evaluate.Gate, cg CaptureGate) (*CaptureVerdict, error) {
	shapes := cg.Shapes
	if len(shapes) == 0 {
		shapes = DefaultShapes()
	}
	if !(cg.Min >= 0 && cg.Min <= 1) {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "min_capture", "minimum capture %v is not in [0, 1]", cg.Min)
	}
	var slack time.Duration
	for _, s := range shapes {
		slack = max(slack, s.Slack)
	}
	set, err := evaluate.Load(ctx, fs, evaluate.Selection{
		Query:    store.ForecastQuery{Zones: g.Zones, Signal: g.Signal, ModelName: g.Model},
		Versions: []string{g.Champion, g.Challenger},
		LeadDays: int((slack + 24*time.Hour - 1) / (24 * time.Hour)),
	})
	if err != nil {
		return nil, err
	}
	set = evaluate.Common(set)
	var champ, chall string
	for k := range set.Issues {
		switch k.ModelVersion {
		case g.Champion:
			champ = Label(k)
		case g.Challenger:
			chall = Label(k)
		}
	}
	if champ == "" || chall == "" {
		return nil, forecast.FieldErrorf(forecast.ENOTFOUND, "challenger", "no issue time has forecasts of both %s version %s (challenger) and version %s (champion) in the store", g.Model, g.Challenger, g.Champion)
	}
	rep, err := RunStored(ctx, StoredConfig{Shapes: shapes, Every: cg.Every, Signal: g.Signal}, set, obs)
	if err != nil {
		return nil, err
	}
	v := &CaptureVerdict{Champion: rep.Capture[champ], Challenger: rep.Capture[chall]}
	for _, s := range rep.Shapes {
		v.Issues += s.Issues
	}
	if v.Issues == 0 || math.IsNaN(v.Champion) || math.IsNaN(v.Challenger) {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "no decision of %s versions %s and %s could be replayed: observations or forecast hours are missing, or the oracle saves nothing", g.Model, g.Champion, g.Challenger)
	}
	v.Pass = v.Challenger >= cg.Min && (!cg.Keep || v.Challenger >= v.Champion)
	return v, nil
}
