package strictjson

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

func TestDuplicate(t *testing.T) {
	t.Parallel()
	many := func(dup bool) string {
		var b strings.Builder
		b.WriteString(`{"o":{`)
		for i := range 100 {
			fmt.Fprintf(&b, `"k%d":%d,`, i, i)
		}
		if dup {
			b.WriteString(`"k57":0,`)
		}
		b.WriteString(`"end":true}}`)
		return b.String()
	}
	for _, tt := range []struct {
		note, body, path string
	}{
		{note: "none", body: `{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`},
		{note: "top level", body: `{"zones":["DE"],"duration":"PT1H","zones":["SE"]}`, path: "zones"},
		{note: "nested", body: `{"request":{"uid":"x","object":{"metadata":{"name":"a","name":"b"}}}}`, path: "request.object.metadata.name"},
		{note: "in an array item", body: `[{"location":"DE"},{"location":"DE","location":"SE"}]`, path: "[1].location"},
		{note: "escaped spelling", body: `{"step":"PT1H","st\u0065p":"PT2H"}`, path: "step"},
		{note: "names inside strings", body: `{"a":"{\"a\":1,\"a\":2}","b":"\\","c":"]}"}`},
		{note: "values equal to names", body: `{"a":"a","b":"a"}`},
		{note: "a large object", body: many(false)},
		{note: "a large object, repeated", body: many(true), path: "o.k57"},
		{note: "arrays of arrays", body: `[[1,2],[{"x":1}],[{"y":1,"y":2}]]`, path: "[2][0].y"},
	} {
		t.Run(tt.note, func(t *testing.T) {
			t.Parallel()
			if !json.Valid([]byte(tt.body)) {
				t.Fatalf("the fixture is not JSON: %s", tt.body)
			}
			p, dup := Duplicate([]byte(tt.body))
			if got, want := p, tt.path; got != want || dup != (want != "") {
				t.Fatalf("Duplicate=%q, %v, want %q", got, dup, want)
			}
			err := Check([]byte(tt.body))
			if (err != nil) != (tt.path != "") || (err != nil && (forecast.ErrorField(err) != tt.path || forecast.ErrorCode(err) != forecast.EINVALID)) {
				t.Fatalf("Check=%v, want EINVALID naming %q", err, tt.path)
			}
		})
	}
}

// FuzzDuplicate: never panics, and on valid JSON finds a repeat exactly
// when decoding into a map loses a member.
//
// fuzz budget: 40000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzDuplicate(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[{"a":{"b":1}},{"b":2,"b":3}]`, `{"\u0061":1,"a":2}`, `"x"`, `{"a":"\"","b":[1,{"c":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, dup := Duplicate(body)
		if !json.Valid(body) {
			return
		}
		if lost := losesMember(body); lost != dup {
			t.Fatalf("Duplicate found a repeat: %v; decoding into maps loses a member: %v (%s)", dup, lost, body)
		}
	})
}

// losesMember reports whether some object of body, valid JSON, has fewer
// members once decoded than it has names in the text.
func losesMember(body []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			lost := false
			for dec.More() {
				k, _ := dec.Token()
				if seen[k.(string)] {
					lost = true
				}
				seen[k.(string)] = true
				if walk() {
					lost = true
				}
			}
			dec.Token()
			return lost
		case json.Delim('['):
			lost := false
			for dec.More() {
				if walk() {
					lost = true
				}
			}
			dec.Token()
			return lost
		}
		return false
	}
	return walk()
}
