// Package backfill issues forecasts as they would have been issued in the
// past and writes them into the forecast store: for each zone and issue time
// T of a plan, the model gets the Lookback hours strictly before T and
// forecasts the hours T .. T+Horizon. Work is split into units (one zone at
// one issue time), planned deterministically so that N shards (the pods of
// a Kubernetes Indexed Job) cover every unit exactly once, batched for the
// model (B ≤ 64 per call), and written with a checkpoint per unit so that a
// rerun of the same job resumes where a killed one stopped and writes no
// duplicates.
package backfill

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/store"
)

// MaxBatch is the largest batch B sent to a model in one call.
const MaxBatch = 64

// Plan says which forecasts a backfill issues.
type Plan struct {
	Zones []forecast.Zone
	// From and To bound the issue times: From, From+Every, … up to and
	// including To. Both UTC and on the hour.
	From, To time.Time
	// Every is the step between issue times, a whole number of hours.
	Every time.Duration
	// Horizon is how far each forecast reaches, a whole number of hours:
	// rows are written for T .. T+Horizon-1h.
	Horizon time.Duration
	// Shards and ShardIndex select this process's part: units are split
	// into Shards contiguous blocks and block ShardIndex is run. Shards 0
	// means 1.
	Shards, ShardIndex int
}

// Validate checks p; errors are EINVALID naming the field (zones, from, to,
// every, horizon, shards, shard_index).
func (p Plan) Validate() error {
	switch {
	case len(p.Zones) == 0:
		return forecast.FieldErrorf(forecast.EINVALID, "zones", "no zones")
	case !onHour(p.From):
		return forecast.FieldErrorf(forecast.EINVALID, "from", "from %s is not a whole UTC hour", p.From.UTC().Format(time.RFC3339))
	case !onHour(p.To):
		return forecast.FieldErrorf(forecast.EINVALID, "to", "to %s is not a whole UTC hour", p.To.UTC().Format(time.RFC3339))
	case p.To.Before(p.From):
		return forecast.FieldErrorf(forecast.EINVALID, "to", "to %s is before from %s", p.To.UTC().Format(time.RFC3339), p.From.UTC().Format(time.RFC3339))
	case p.Every < forecast.Hour || p.Every%forecast.Hour != 0:
		return forecast.FieldErrorf(forecast.EINVALID, "every", "every %v is not a positive whole number of hours", p.Every)
	case p.Horizon < forecast.Hour || p.Horizon%forecast.Hour != 0:
		return forecast.FieldErrorf(forecast.EINVALID, "horizon", "horizon %v is not a positive whole number of hours", p.Horizon)
	case p.Shards < 0:
		return forecast.FieldErrorf(forecast.EINVALID, "shards", "shards %d is negative", p.Shards)
	case p.ShardIndex < 0 || p.ShardIndex >= max(p.Shards, 1):
		return forecast.FieldErrorf(forecast.EINVALID, "shard_index", "shard index %d is not in 0..%d", p.ShardIndex, max(p.Shards, 1)-1)
	}
	seen := map[forecast.Zone]bool{}
	for _, z := range p.Zones {
		if seen[z] {
			return forecast.FieldErrorf(forecast.EINVALID, "zones", "zone %s is listed twice", z)
		}
		seen[z] = true
	}
	return nil
}

// HorizonHours returns the horizon in hours.
func (p Plan) HorizonHours() int { return int(p.Horizon / forecast.Hour) }

// IssueTimes returns the issue times of every zone, oldest first.
func (p Plan) IssueTimes() []time.Time {
	var ts []time.Time
	for t := p.From.UTC(); !t.After(p.To); t = t.Add(p.Every) {
		ts = append(ts, t)
	}
	return ts
}

// AllUnits returns every unit of the plan, ignoring the shard: zones in the
// plan's order, issue times ascending within a zone.
func (p Plan) AllUnits() []store.Unit {
	ts := p.IssueTimes()
	out := make([]store.Unit, 0, len(p.Zones)*len(ts))
	for _, z := range p.Zones {
		for _, t := range ts {
			out = append(out, store.Unit{Zone: z, IssuedAt: t})
		}
	}
	return out
}

// Units returns this shard's units: the units of AllUnits, in that order,
// cut into Shards contiguous blocks whose sizes differ by at most one, block
// ShardIndex. A block is a run of issue times of one zone, or spans the end
// of one zone's run and the start of the next, so each shard reads little
// history. The shards of one plan cover every unit exactly once.
func (p Plan) Units() []store.Unit {
	all := p.AllUnits()
	n := max(p.Shards, 1)
	lo, hi := ShardBounds(len(all), n, p.ShardIndex)
	return all[lo:hi]
}

// ShardBounds returns block i of n contiguous blocks of total items:
// [lo, hi), the first total%n blocks one longer than the others.
func ShardBounds(total, n, i int) (lo, hi int) {
	size, extra := total/n, total%n
	lo = i*size + min(i, extra)
	hi = lo + size
	if i < extra {
		hi++
	}
	return lo, hi
}

// KeyInput is what identifies a backfill job: the same input gives the same
// job key, so a rerun resumes from the job's checkpoint.
type KeyInput struct {
	// Model names the model source as given (a models:/ URI, a models
	// directory, an endpoint).
	Model string
	// Versions are the resolved "zone=name@version" of each zone: a
	// promotion makes a new job, not a skipped one.
	Versions []string
	Signal   forecast.Signal
	Plan     Plan
}

// JobKey returns a stable key for in: "bf-" and 24 hex digits of a SHA-256
// over a canonical text of every field (zones sorted, times in RFC 3339).
func JobKey(in KeyInput) string {
	zones := make([]string, len(in.Plan.Zones))
	for i, z := range in.Plan.Zones {
		zones[i] = string(z)
	}
	slices.Sort(zones)
	versions := slices.Clone(in.Versions)
	slices.Sort(versions)
	text := strings.Join([]string{
		"model=" + in.Model,
		"versions=" + strings.Join(versions, ","),
		"signal=" + string(in.Signal),
		"zones=" + strings.Join(zones, ","),
		"from=" + in.Plan.From.UTC().Format(time.RFC3339),
		"to=" + in.Plan.To.UTC().Format(time.RFC3339),
		fmt.Sprintf("every=%d", in.Plan.Every/time.Second),
		fmt.Sprintf("horizon=%d", in.Plan.Horizon/time.Second),
		fmt.Sprintf("shard=%d/%d", in.Plan.ShardIndex, max(in.Plan.Shards, 1)),
	}, "\n")
	sum := sha256.Sum256([]byte(text))
	return "bf-" + hex.EncodeToString(sum[:12])
}

// Pending returns units minus done, keeping units' order.
func Pending(units, done []store.Unit) []store.Unit {
	if len(done) == 0 {
		return units
	}
	skip := make(map[unitKey]bool, len(done))
	for _, u := range done {
		skip[keyOf(u)] = true
	}
	out := make([]store.Unit, 0, len(units))
	for _, u := range units {
		if !skip[keyOf(u)] {
			out = append(out, u)
		}
	}
	return out
}

type unitKey struct {
	zone forecast.Zone
	unix int64
}

func keyOf(u store.Unit) unitKey { return unitKey{u.Zone, u.IssuedAt.Unix()} }

// byZone groups units by zone, in order of first appearance, keeping each
// zone's order.
func byZone(units []store.Unit) (zones []forecast.Zone, groups map[forecast.Zone][]store.Unit) {
	groups = map[forecast.Zone][]store.Unit{}
	for _, u := range units {
		if _, ok := groups[u.Zone]; !ok {
			zones = append(zones, u.Zone)
		}
		groups[u.Zone] = append(groups[u.Zone], u)
	}
	for _, z := range zones {
		slices.SortFunc(groups[z], func(a, b store.Unit) int { return cmp.Compare(a.IssuedAt.Unix(), b.IssuedAt.Unix()) })
	}
	return zones, groups
}

func onHour(t time.Time) bool { return !t.IsZero() && t.Equal(t.Truncate(forecast.Hour)) }
