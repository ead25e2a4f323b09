// Package filter parses the search arguments of MLflow's model-registry API:
// filter strings (ParseModels, ParseVersions), order_by terms (ParseOrderBy)
// and page tokens (EncodePageToken, DecodePageToken), following MLflow's
// SearchModelUtils and SearchModelVersionUtils.
//
// The filter grammar is
//
//	filter     = [ comparison { AND comparison } ]
//	comparison = key op value
//	key        = name | run_id | source_path | version_number
//	           | attribute.<attr> | tags.<word> | tags.`any` | tags."any" | tags.'any'
//	op         = "=" | "!=" | LIKE | ILIKE | IN
//	value      = 'string' | "string" | integer | ( 'string' { , 'string' } )
//
// with keywords in any case. Inside a quoted string or name, a doubled quote
// or (not in backticks) a backslash escapes the quote. Strings keep their
// escapes as written: MLflow strips the quotes and compares the rest
// verbatim, and so do we (LIKE patterns go to the backend as they are).
// Which keys, operators and value types are allowed depends on the search
// (see ParseModels, ParseVersions).
//
// Every error is a *forecast.Error with code EINVALID and Field "filter",
// "order_by" or "page_token"; filter errors say where (a byte offset).
package filter

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry"
)

// Limits on what one filter may ask for, so that a request cannot make a
// backend build an unbounded query.
const (
	MaxFilterLen = 64 << 10
	MaxClauses   = 100
	MaxInValues  = 1000
)

// Operators of registry.Clause.
const (
	OpEq    = "="
	OpNe    = "!="
	OpLike  = "LIKE"
	OpILike = "ILIKE"
	OpIn    = "IN"
)

// keyKind says what values and operators a key takes.
type keyKind int

const (
	kindString keyKind = iota // =, !=, LIKE, ILIKE on a quoted string
	kindRunID                 // kindString plus IN ('a', 'b')
	kindNumber                // =, != on an integer (quoted or not)
	kindTag                   // like kindString
)

// search describes the keys one search accepts.
type search struct {
	what  string             // "registered models" or "model versions"
	attrs map[string]keyKind // attribute keys
}

var (
	modelSearch   = search{what: "registered models", attrs: map[string]keyKind{"name": kindString}}
	versionSearch = search{what: "model versions", attrs: map[string]keyKind{
		"name": kindString, "run_id": kindRunID, "source_path": kindString, "version_number": kindNumber,
	}}
)

// ParseModels parses a filter of registered-models/search: keys name and
// tags.<key>, operators =, !=, LIKE, ILIKE. An empty (or all-space) filter
// yields no clauses.
func ParseModels(s string) ([]registry.Clause, error) { return parse(s, modelSearch) }

// ParseVersions parses a filter of model-versions/search: keys name,
// run_id, source_path, version_number and tags.<key>; operators =, !=,
// LIKE, ILIKE on strings, IN ('a', …) on run_id, = and != on
// version_number (an integer, normalised to its decimal form).
func ParseVersions(s string) ([]registry.Clause, error) { return parse(s, versionSearch) }

func parse(s string, sr search) ([]registry.Clause, error) {
	switch {
	case len(s) > MaxFilterLen:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "filter", "filter is %d bytes long, the limit is %d", len(s), MaxFilterLen)
	case !utf8.ValidString(s):
		return nil, forecast.FieldErrorf(forecast.EINVALID, "filter", "filter is not valid UTF-8")
	case strings.IndexByte(s, 0) >= 0:
		return nil, forecast.FieldErrorf(forecast.EINVALID, "filter", "filter contains a NUL byte at offset %d", strings.IndexByte(s, 0))
	}
	p := &parser{lex: lexer{src: s}, sr: sr}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var out []registry.Clause
	for p.tok.kind != tokEOF {
		if len(out) > 0 {
			if !p.isKeyword("AND") {
				return nil, p.errorf(p.tok.pos, "expected AND or the end of the filter, found %s", describe(p.tok))
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		if len(out) == MaxClauses {
			return nil, p.errorf(p.tok.pos, "too many comparisons, the limit is %d", MaxClauses)
		}
		c, err := p.comparison()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

type parser struct {
	lex lexer
	sr  search
	tok token
}

func (p *parser) advance() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errorf(pos int, format string, args ...any) error {
	return p.lex.errorf(pos, format, args...)
}

func (p *parser) isKeyword(kw string) bool {
	return p.tok.kind == tokWord && strings.EqualFold(p.tok.text, kw)
}

// comparison parses key op value.
func (p *parser) comparison() (registry.Clause, error) {
	key, kind, err := p.key()
	if err != nil {
		return registry.Clause{}, err
	}
	if err := p.advance(); err != nil {
		return registry.Clause{}, err
	}
	op, err := p.operator(key, kind)
	if err != nil {
		return registry.Clause{}, err
	}
	if err := p.advance(); err != nil {
		return registry.Clause{}, err
	}
	var values []string
	if op == OpIn {
		values, err = p.list(key)
	} else {
		values, err = p.value(key, kind)
	}
	if err != nil {
		return registry.Clause{}, err
	}
	return registry.Clause{Key: key, Op: op, Values: values}, nil
}

// key reads the current token as a search key and returns its canonical
// form ("name", "tags.<key>").
func (p *parser) key() (string, keyKind, error) {
	t := p.tok
	if t.kind != tokWord && t.kind != tokIdent {
		return "", 0, p.errorf(t.pos, "expected a key (%s), found %s", p.validKeys(), describe(t))
	}
	head := t.segs[0].text
	if len(t.segs) == 1 {
		return p.attribute(t, head)
	}
	switch head {
	case "attribute":
		if len(t.segs) != 2 || t.segs[1].quoted {
			return "", 0, p.errorf(t.pos, "invalid attribute key %q; valid keys are %s", t.text, p.validKeys())
		}
		return p.attribute(t, t.segs[1].text)
	case "tags", "tag":
		rest := t.segs[1:]
		if len(rest) > 1 {
			for _, s := range rest {
				if s.quoted {
					return "", 0, p.errorf(t.pos, "invalid tag key %q: quote the whole key, as in tags.`my.key`", t.text)
				}
			}
		}
		parts := make([]string, len(rest))
		for i, s := range rest {
			parts[i] = s.text
		}
		k := strings.Join(parts, ".")
		if k == "" {
			return "", 0, p.errorf(t.pos, "empty tag key")
		}
		return "tags." + k, kindTag, nil
	}
	return "", 0, p.errorf(t.pos, "invalid entity type %q; valid entity types are attribute, tag, tags", head)
}

func (p *parser) attribute(t token, name string) (string, keyKind, error) {
	kind, ok := p.sr.attrs[name]
	if !ok {
		return "", 0, p.errorf(t.pos, "invalid attribute key %q for %s; valid keys are %s", name, p.sr.what, p.validKeys())
	}
	return name, kind, nil
}

func (p *parser) validKeys() string {
	if len(p.sr.attrs) == 1 {
		return "name, tags.<key>"
	}
	return "name, run_id, source_path, version_number, tags.<key>"
}

// operator reads the comparison operator for key.
func (p *parser) operator(key string, kind keyKind) (string, error) {
	t := p.tok
	var op string
	switch {
	case t.kind == tokOp || t.kind == tokWord:
		op = strings.ToUpper(t.text)
	default:
		return "", p.errorf(t.pos, "expected a comparator (%s) after %s, found %s", allowedOps(kind), key, describe(t))
	}
	ok := op == OpEq || op == OpNe
	switch kind {
	case kindString, kindTag:
		ok = ok || op == OpLike || op == OpILike
	case kindRunID:
		ok = ok || op == OpLike || op == OpILike || op == OpIn
	}
	if !ok {
		return "", p.errorf(t.pos, "invalid comparator %s for %s; use one of %s", describe(t), key, allowedOps(kind))
	}
	return op, nil
}

func allowedOps(kind keyKind) string {
	switch kind {
	case kindNumber:
		return "=, !="
	case kindRunID:
		return "=, !=, LIKE, ILIKE, IN"
	}
	return "=, !=, LIKE, ILIKE"
}

// value reads one comparison value.
func (p *parser) value(key string, kind keyKind) ([]string, error) {
	t := p.tok
	switch {
	case kind == kindNumber && (t.kind == tokNumber || t.kind == tokString):
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil {
			return nil, p.errorf(t.pos, "%s must be compared with an integer, found %s", key, describe(t))
		}
		return []string{strconv.FormatInt(n, 10)}, p.advance()
	case t.kind == tokString:
		return []string{t.text}, p.advance()
	case t.kind == tokLParen:
		return nil, p.errorf(t.pos, "only run_id IN takes a list of values")
	}
	return nil, p.errorf(t.pos, "expected a quoted string value for %s (e.g. 'my-value'), found %s", key, describe(t))
}

// list reads ( 'a' { , 'b' } ).
func (p *parser) list(key string) ([]string, error) {
	if p.tok.kind != tokLParen {
		return nil, p.errorf(p.tok.pos, "IN needs a parenthesised list of quoted strings, e.g. %s IN ('a', 'b'), found %s", key, describe(p.tok))
	}
	open := p.tok.pos
	if err := p.advance(); err != nil {
		return nil, err
	}
	var values []string
	for {
		if p.tok.kind != tokString {
			return nil, p.errorf(p.tok.pos, "expected a quoted string in the list opened at offset %d, found %s", open, describe(p.tok))
		}
		if len(values) == MaxInValues {
			return nil, p.errorf(p.tok.pos, "too many values in the list, the limit is %d", MaxInValues)
		}
		values = append(values, p.tok.text)
		if err := p.advance(); err != nil {
			return nil, err
		}
		switch p.tok.kind {
		case tokComma:
			if err := p.advance(); err != nil {
				return nil, err
			}
		case tokRParen:
			return values, p.advance()
		default:
			return nil, p.errorf(p.tok.pos, "expected ',' or ')' in the list opened at offset %d, found %s", open, describe(p.tok))
		}
	}
}

// describe names a token for an error message.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "the end of the filter"
	case tokString:
		return "a string"
	}
	s := t.text
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
