// Package strictjson holds the one rule every JSON body carbongate reads
// follows beyond encoding/json's: a member name given twice in one object
// is refused, not decided by the decoder (encoding/json keeps the last
// one, other readers of the same body may keep the first). The scheduling
// API, the Carbon Aware SDK API's batches, the admission webhook and the
// registry API all apply it, naming the member.
package strictjson

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
)

// smallObject is how many member names an object is checked against by
// a linear search before a map takes over.
const smallObject = 16

type frame struct {
	object    bool
	expectKey bool
	key       string // the current member's name (objects)
	index     int    // the current element (arrays)
	names     []string
	set       map[string]struct{}
}

// seen records name in f and reports whether it was there already.
func (f *frame) seen(name string) bool {
	if f.set != nil {
		if _, ok := f.set[name]; ok {
			return true
		}
		f.set[name] = struct{}{}
		return false
	}
	for _, n := range f.names {
		if n == name {
			return true
		}
	}
	f.names = append(f.names, name)
	if len(f.names) > smallObject {
		f.set = make(map[string]struct{}, 2*len(f.names))
		for _, n := range f.names {
			f.set[n] = struct{}{}
		}
		f.names = nil
	}
	return false
}

// Duplicate returns the path of the first member name that body, valid
// JSON, gives twice in one object, as its members and elements are named
// in errors ("request.object.metadata.name", "[2].location"), and true;
// names are compared unescaped ("a" and "\u0061" are one name). Invalid
// JSON gives no guarantee beyond not panicking: check it is valid first.
func Duplicate(body []byte) (string, bool) {
	var stack []frame
	for i := 0; i < len(body); i++ {
		switch c := body[i]; c {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case ',':
			if n := len(stack); n > 0 {
				if top := &stack[n-1]; top.object {
					top.expectKey = true
				} else {
					top.index++
				}
			}
		case '"':
			j := i + 1
			escaped := false
			for ; j < len(body) && body[j] != '"'; j++ {
				if body[j] == '\\' {
					escaped = true
					j++
				}
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				top := &stack[n-1]
				name := string(body[i+1 : min(j, len(body))])
				// Decoded as encoding/json does: escapes, and invalid UTF-8
				// read as U+FFFD (two different invalid bytes are one key).
				if escaped || !utf8.ValidString(name) {
					var s string
					if json.Unmarshal(body[i:min(j+1, len(body))], &s) == nil {
						name = s
					}
				}
				top.key, top.expectKey = name, false
				if top.seen(name) {
					return path(stack), true
				}
			}
			i = j
		}
	}
	return "", false
}

func path(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		if f.object {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// Check is Duplicate as an EINVALID error naming the member (its field is
// the path), nil when no name is repeated.
func Check(body []byte) error {
	p, dup := Duplicate(body)
	if !dup {
		return nil
	}
	p = forecast.Clip(p, 128)
	return forecast.FieldErrorf(forecast.EINVALID, p, "member %q is given twice in one JSON object: give each member once", p)
}
