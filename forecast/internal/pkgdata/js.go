package pkgdata

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The packages ship compiled JavaScript. The tables read here are plain
// literals: objects keyed by identifiers, quoted strings, numbers or
// computed references ([core_1.COMPUTE_PROCESSOR_TYPES.SKYLAKE]), whose
// values are numbers, strings, arrays, objects or references. value parses
// that subset and nothing more; functions and other code are never parsed,
// because each table is located by its label first (find).

// Ref is an unresolved reference such as core_1.COMPUTE_PROCESSOR_TYPES.X.
type Ref string

// Entry is one key of an object literal, in source order (CCF takes the
// last type of a family as its largest). A computed key ([a.b]) is "\x00"
// followed by the reference, for the caller to resolve.
type Entry struct {
	Key string
	Val any
}

// Object is an object literal's entries in source order.
type Object []Entry

// Get returns the value of key.
func (o Object) Get(key string) (any, bool) {
	for _, e := range o {
		if e.Key == key {
			return e.Val, true
		}
	}
	return nil, false
}

type parser struct {
	src string
	pos int
}

// Find parses the literal after the first "label =" or "label:" in src.
func Find(src, label string) (any, error) {
	re := regexp.MustCompile(`(?m)(^|[\s.,{])` + regexp.QuoteMeta(label) + `\s*[:=]\s*`)
	// The first matches may be the chained "exports.A = exports.B = void 0"
	// declarations: take the first match whose value is a literal.
	for _, loc := range re.FindAllStringIndex(src, -1) {
		p := &parser{src: src, pos: loc[1]}
		v, err := p.value()
		if _, isRef := v.(Ref); isRef {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("%s not found", label)
}

func (p *parser) skip() {
	for p.pos < len(p.src) {
		switch {
		case strings.ContainsRune(" \t\r\n", rune(p.src[p.pos])):
			p.pos++
		case strings.HasPrefix(p.src[p.pos:], "//"):
			if i := strings.IndexByte(p.src[p.pos:], '\n'); i >= 0 {
				p.pos += i + 1
			} else {
				p.pos = len(p.src)
			}
		default:
			return
		}
	}
}

func (p *parser) errorf(format string, args ...any) error {
	line := 1 + strings.Count(p.src[:p.pos], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, args...))
}

func (p *parser) peek() byte {
	p.skip()
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

var (
	numRE   = regexp.MustCompile(`^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?`)
	identRE = regexp.MustCompile(`^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*`)
)

func (p *parser) value() (any, error) {
	switch c := p.peek(); {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '\'' || c == '"':
		return p.str()
	case c == '-' || c == '.' || (c >= '0' && c <= '9'):
		m := numRE.FindString(p.src[p.pos:])
		if m == "" {
			return nil, p.errorf("bad number")
		}
		p.pos += len(m)
		return strconv.ParseFloat(m, 64)
	default:
		m := identRE.FindString(p.src[p.pos:])
		if m == "" {
			return nil, p.errorf("unexpected %q", p.src[p.pos:min(p.pos+20, len(p.src))])
		}
		p.pos += len(m)
		return Ref(m), nil
	}
}

func (p *parser) str() (string, error) {
	q := p.src[p.pos]
	var b strings.Builder
	for i := p.pos + 1; i < len(p.src); i++ {
		switch c := p.src[i]; c {
		case q:
			p.pos = i + 1
			return b.String(), nil
		case '\\':
			i++
			if i < len(p.src) {
				b.WriteByte(p.src[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) array() ([]any, error) {
	p.pos++ // [
	var out []any
	for {
		if p.peek() == ']' {
			p.pos++
			return out, nil
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
		default:
			return nil, p.errorf("want , or ] in array")
		}
	}
}

func (p *parser) object() (Object, error) {
	p.pos++ // {
	var out Object
	for {
		c := p.peek()
		if c == '}' {
			p.pos++
			return out, nil
		}
		var key string
		switch {
		case c == '\'' || c == '"':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			key = s
		case c == '[':
			p.pos++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			r, ok := v.(Ref)
			if !ok {
				return nil, p.errorf("computed key is not a reference")
			}
			if p.peek() != ']' {
				return nil, p.errorf("want ] after computed key")
			}
			p.pos++
			key = "\x00" + string(r) // resolved by the caller
		default:
			m := numRE.FindString(p.src[p.pos:])
			if m == "" {
				m = identRE.FindString(p.src[p.pos:])
			}
			if m == "" {
				return nil, p.errorf("bad object key")
			}
			p.pos += len(m)
			key = m
		}
		if p.peek() != ':' {
			return nil, p.errorf("want : after key %q", key)
		}
		p.pos++
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{key, v})
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
		default:
			return nil, p.errorf("want , or } after key %q", key)
		}
	}
}
