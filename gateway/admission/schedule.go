package admission

import (
	"context"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway"
)

// runNowSlack is how much later than now plus its run time a workload
// that runs at once may end, for the gateway: it reads its clock after
// the webhook, and rounds it up to the second, so a deadline of exactly
// now plus the run time would be infeasible by then. Under the least
// search step, it leaves the gateway one start: its now.
const runNowSlack = gateway.MinStep - time.Second

// runNowDeadline is the deadline to ask for a run of dur starting now.
func runNowDeadline(now time.Time, dur time.Duration) time.Time {
	return now.Add(dur + runNowSlack)
}

// schedule asks sched where and when to run s over zones, parsed as the
// HTTP API parses POST /v1/schedule {"zones", "duration", "deadline"}
// (gateway.ParseRequest), as the OPA policy asks it. It returns within the
// configured timeout even if sched does not.
func (w *Webhook) schedule(ctx context.Context, sched Scheduler, zones []forecast.Zone, s spec) (gateway.Decision, error) {
	text := gateway.RequestText{Zones: make([]string, len(zones)), Duration: &s.Duration}
	for i, z := range zones {
		text.Zones[i] = string(z)
	}
	if s.Deadline != "" {
		text.Deadline = &s.Deadline
	}
	if s.Origin != "" {
		text.Origin = &s.Origin
	}
	if s.EarliestStart != "" {
		text.EarliestStart = &s.EarliestStart
	}
	req, err := gateway.ParseRequest(text)
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
