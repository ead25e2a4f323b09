package filter

import (
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/registry"
)

// Format renders clauses as a filter string that ParseModels or
// ParseVersions (whichever accepted them) parse back to the same clauses,
// e.g. for logs or to forward a search to a real MLflow server.
func Format(cs []registry.Clause) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(" AND ")
		}
		writeKey(&b, c.Key)
		b.WriteByte(' ')
		b.WriteString(c.Op)
		b.WriteByte(' ')
		if c.Op == OpIn {
			b.WriteByte('(')
			for j, v := range c.Values {
				if j > 0 {
					b.WriteString(", ")
				}
				writeString(&b, v)
			}
			b.WriteByte(')')
			continue
		}
		var v string
		if len(c.Values) > 0 {
			v = c.Values[0]
		}
		if _, err := strconv.ParseInt(v, 10, 64); err == nil && c.Key == "version_number" {
			b.WriteString(v)
			continue
		}
		writeString(&b, v)
	}
	return b.String()
}

// writeKey writes tags.<key> bare when the key is dot-separated words, else
// quoted with backticks (or double quotes when the key holds a lone
// backtick).
func writeKey(b *strings.Builder, key string) {
	tag, ok := strings.CutPrefix(key, "tags.")
	if !ok {
		b.WriteString(key)
		return
	}
	b.WriteString("tags.")
	switch {
	case bareKey(tag):
		b.WriteString(tag)
	case validInside(tag, '`'):
		b.WriteString("`" + tag + "`")
	default:
		b.WriteString(`"` + tag + `"`)
	}
}

// bareKey reports whether key reads back unquoted: words joined by dots.
func bareKey(key string) bool {
	for _, w := range strings.Split(key, ".") {
		if w == "" {
			return false
		}
		for _, r := range w {
			if !isWordRune(r) {
				return false
			}
		}
	}
	return true
}

// writeString writes raw in single quotes, or in double quotes when raw
// holds a lone single quote. Raw content from the parser always fits one.
func writeString(b *strings.Builder, raw string) {
	if validInside(raw, '\'') {
		b.WriteString("'" + raw + "'")
		return
	}
	b.WriteString(`"` + raw + `"`)
}
