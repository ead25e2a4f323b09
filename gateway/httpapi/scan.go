package httpapi

import "github.com/carbongate/carbongate/gateway/api"

// scanSchedule decodes the common shape of a scheduling request without
// reflection: one JSON object whose members are among zones (an array of
// strings), duration, earliest_start, deadline, signal, origin and step
// (strings), each at most once and spelled exactly so, with strings of
// printable ASCII without escapes, and nothing but whitespace after it. It
// returns false for anything else (locations, null, escapes, other
// spellings, repeated or unknown members, malformed JSON), and then the
// caller decodes with encoding/json, which gives the same
// api.ScheduleRequest for
// every body scanSchedule accepts and reports the errors. The strings share
// one copy of body. A member added to api.ScheduleRequest must be added here or to
// the members left to encoding/json (slowFields in scan_test.go), or
// TestScanCoversRequestFields fails.
func scanSchedule(body []byte) (api.ScheduleRequest, bool) {
	var w api.ScheduleRequest
	sc := scanner{b: body}
	if !sc.byte('{') {
		return w, false
	}
	var str string // body as a string, copied once on the first string
	text := func(i, j int) string {
		if str == "" {
			str = string(body)
		}
		return str[i:j]
	}
	var seen uint8
	for first := true; ; first = false {
		if sc.byte('}') {
			break
		}
		if !first && !sc.byte(',') {
			return w, false
		}
		i, j, ok := sc.str()
		if !ok || !sc.byte(':') {
			return w, false
		}
		var dst **string
		var bit uint8
		switch string(body[i:j]) {
		case "zones":
			bit = 1 << 0
		case "duration":
			bit, dst = 1<<1, &w.Duration
		case "earliest_start":
			bit, dst = 1<<2, &w.EarliestStart
		case "deadline":
			bit, dst = 1<<3, &w.Deadline
		case "signal":
			bit, dst = 1<<4, &w.Signal
		case "origin":
			bit, dst = 1<<5, &w.Origin
		case "step":
			bit, dst = 1<<6, &w.Step
		default:
			return w, false
		}
		if seen&bit != 0 {
			return w, false
		}
		seen |= bit
		if dst != nil {
			i, j, ok := sc.str()
			if !ok {
				return w, false
			}
			s := text(i, j)
			*dst = &s
			continue
		}
		if !sc.byte('[') {
			return w, false
		}
		w.Zones = make([]string, 0, 16)
		for k := 0; !sc.byte(']'); k++ {
			if k > 0 && !sc.byte(',') {
				return w, false
			}
			i, j, ok := sc.str()
			if !ok {
				return w, false
			}
			w.Zones = append(w.Zones, text(i, j))
		}
	}
	sc.space()
	return w, sc.i == len(body)
}

// scanner reads the JSON subset of scanSchedule.
type scanner struct {
	b []byte
	i int
}

// space skips JSON whitespace.
func (sc *scanner) space() {
	for sc.i < len(sc.b) {
		switch sc.b[sc.i] {
		case ' ', '\t', '\n', '\r':
			sc.i++
		default:
			return
		}
	}
}

// byte skips whitespace and then c, if c is next.
func (sc *scanner) byte(c byte) bool {
	sc.space()
	if sc.i < len(sc.b) && sc.b[sc.i] == c {
		sc.i++
		return true
	}
	return false
}

// str skips whitespace and a string of printable ASCII without escapes, and
// returns the bounds of its contents.
func (sc *scanner) str() (i, j int, ok bool) {
	if !sc.byte('"') {
		return 0, 0, false
	}
	i = sc.i
	for j = i; j < len(sc.b); j++ {
		switch c := sc.b[j]; {
		case c == '"':
			sc.i = j + 1
			return i, j, true
		case c < 0x20 || c == '\\' || c >= 0x80:
			return 0, 0, false
		}
	}
	return 0, 0, false
}
