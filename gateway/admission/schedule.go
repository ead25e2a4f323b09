package admission

import (
	"context"
	"encoding/json"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
	"github.com/carbongate/carbongate/gateway/httpapi"
)

// scheduleJSON is the body the OPA policy posts to /v1/schedule.
type scheduleJSON struct {
	Zones    []forecast.Zone `json:"zones"`
	Duration string          `json:"duration"`
	Deadline *string         `json:"deadline,omitempty"`
}

// schedule asks the gateway where and when to run s over zones, exactly as
// POST /v1/schedule {"zones", "duration", "deadline"} would: the request
// goes through the HTTP API's decoder, so that parsing cannot differ. It
// returns within the configured timeout even if sched does not.
func (w *Webhook) schedule(ctx context.Context, sched Scheduler, zones []forecast.Zone, s spec) (gateway.Decision, error) {
	body := scheduleJSON{Zones: zones, Duration: s.Duration}
	if s.Deadline != "" {
		body.Deadline = &s.Deadline
	}
	b, err := json.Marshal(body)
	if err != nil {
		return gateway.Decision{}, err
	}
	req, err := httpapi.DecodeScheduleRequest(b)
	if err != nil {
		return gateway.Decision{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	type result struct {
		d   gateway.Decision
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := sched.Schedule(ctx, req)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-ctx.Done():
		return gateway.Decision{}, ctx.Err()
	}
}
