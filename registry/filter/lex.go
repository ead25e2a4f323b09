package filter

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/carbongate/carbongate/forecast"
)

// tokKind is the kind of a lexical token of a filter string.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // tags.key, tags.`my key`, tags."k", tags.'k', attribute.name
	tokString         // 'x' or "x"
	tokNumber         // -?[0-9]+ (with an optional fraction, rejected later)
	tokOp             // a run of <>=~! characters
	tokWord           // AND, LIKE, ILIKE, IN, NOT, OR, ... (a bare word not followed by '.')
	tokLParen
	tokRParen
	tokComma
)

// token is one lexeme. For tokIdent, segs holds the dot-separated parts
// (quoted parts without their quotes, escapes kept as written); for
// tokString, text is the raw content between the quotes.
type token struct {
	kind tokKind
	pos  int    // byte offset in the filter string
	text string // the lexeme as written (tokString: content between quotes)
	segs []segment
}

// segment is one dot-separated part of an identifier.
type segment struct {
	text   string
	quoted bool
}

// lexer splits a filter string into tokens, following the lexical rules of
// sqlparse, which MLflow uses: in '…' and "…" strings a doubled quote or a
// backslash escapes the quote, in `…` names only a doubled backtick does.
// As in MLflow, quotes are stripped but escapes are not decoded.
type lexer struct {
	src string
	pos int
}

func (l *lexer) errorf(pos int, format string, args ...any) error {
	return forecast.FieldErrorf(forecast.EINVALID, "filter", "%s at offset %d", fmt.Sprintf(format, args...), pos)
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) {
		r, n := utf8.DecodeRuneInString(l.src[l.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		l.pos += n
	}
}

// next returns the next token.
func (l *lexer) next() (token, error) {
	l.skipSpace()
	start := l.pos
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, pos: start}, nil
	}
	c := l.src[l.pos]
	switch {
	case c == '(':
		l.pos++
		return token{kind: tokLParen, pos: start, text: "("}, nil
	case c == ')':
		l.pos++
		return token{kind: tokRParen, pos: start, text: ")"}, nil
	case c == ',':
		l.pos++
		return token{kind: tokComma, pos: start, text: ","}, nil
	case c == '\'' || c == '"':
		s, err := l.quoted(c)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, pos: start, text: s}, nil
	case strings.IndexByte("<>=~!", c) >= 0:
		for l.pos < len(l.src) && strings.IndexByte("<>=~!", l.src[l.pos]) >= 0 {
			l.pos++
		}
		return token{kind: tokOp, pos: start, text: l.src[start:l.pos]}, nil
	case c == '-' || isDigit(c):
		return l.number()
	case c == '`':
		return token{}, l.errorf(start, "a quoted name must follow 'tags.'")
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
	if r == '_' || unicode.IsLetter(r) {
		return l.ident()
	}
	return token{}, l.errorf(start, "unexpected character %q", r)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// word reads a run of letters, digits and underscores.
func (l *lexer) word() string {
	start := l.pos
	for l.pos < len(l.src) {
		r, n := utf8.DecodeRuneInString(l.src[l.pos:])
		if !isWordRune(r) {
			break
		}
		l.pos += n
	}
	return l.src[start:l.pos]
}

// ident reads word ('.' (word | `…` | "…" | '…'))*. A lone word is a tokWord, to
// be read as a keyword or a bare attribute name by the parser.
func (l *lexer) ident() (token, error) {
	start := l.pos
	segs := []segment{{text: l.word()}}
	for l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		if l.pos >= len(l.src) {
			return token{}, l.errorf(l.pos, "a name must follow '.'")
		}
		switch c := l.src[l.pos]; {
		case c == '`' || c == '"' || c == '\'':
			s, err := l.quoted(c)
			if err != nil {
				return token{}, err
			}
			segs = append(segs, segment{text: s, quoted: true})
		default:
			w := l.word()
			if w == "" {
				return token{}, l.errorf(l.pos, "a name must follow '.'")
			}
			segs = append(segs, segment{text: w})
		}
	}
	kind := tokIdent
	if len(segs) == 1 {
		kind = tokWord
	}
	return token{kind: kind, pos: start, text: l.src[start:l.pos], segs: segs}, nil
}

// number reads -?[0-9]+(\.[0-9]+)?.
func (l *lexer) number() (token, error) {
	start := l.pos
	if l.src[l.pos] == '-' {
		l.pos++
	}
	digits := l.pos
	for l.pos < len(l.src) && (isDigit(l.src[l.pos]) || l.src[l.pos] == '.') {
		l.pos++
	}
	if l.pos == digits {
		return token{}, l.errorf(start, "unexpected character '-'")
	}
	if l.pos < len(l.src) {
		if r, _ := utf8.DecodeRuneInString(l.src[l.pos:]); isWordRune(r) {
			return token{}, l.errorf(start, "malformed number %q", l.src[start:l.pos+1])
		}
	}
	return token{kind: tokNumber, pos: start, text: l.src[start:l.pos]}, nil
}

// quoted reads a string quoted with q starting at l.pos and returns its raw
// content. Inside '…' and "…" a backslash escapes the next byte and a
// doubled quote stands for itself; inside `…` only doubling escapes.
func (l *lexer) quoted(q byte) (string, error) {
	start := l.pos
	l.pos++
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == '\\' && q != '`':
			if l.pos+1 >= len(l.src) {
				return "", l.errorf(start, "unterminated quoted string")
			}
			l.pos += 2
		case c == q && l.pos+1 < len(l.src) && l.src[l.pos+1] == q:
			l.pos += 2
		case c == q:
			l.pos++
			return l.src[start+1 : l.pos-1], nil
		default:
			l.pos++
		}
	}
	return "", l.errorf(start, "unterminated quoted string")
}

// validInside reports whether raw, written between two q quotes, reads back
// as exactly raw (the inverse of lexer.quoted).
func validInside(raw string, q byte) bool {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\' && q != '`':
			if i+1 >= len(raw) {
				return false
			}
			i++
		case c == q:
			if i+1 >= len(raw) || raw[i+1] != q {
				return false
			}
			i++
		}
	}
	return true
}
