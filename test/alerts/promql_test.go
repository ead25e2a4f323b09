//go:build interop

package alerts

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// promqlKeywords are the identifiers of PromQL that are not metric names
// when not followed by "(": aggregation operators (followed by by/without),
// binary operators, modifiers.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"inf": true, "nan": true, "start": true, "end": true,
}

// labelLists are the keywords followed by a parenthesised list of label
// names.
var labelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// metricNames returns the metric names the PromQL expression expr selects,
// in order of appearance, each once. It is a lexer, not a parser (the
// Prometheus module would pull another Kubernetes version into go.mod):
// string literals, label matchers {…}, ranges and subqueries […],
// comments, numbers and durations, Grafana variables ($x, ${x}), function
// and aggregation names (an identifier followed by "("), keywords and the
// label lists of by/without/on/ignoring/group_left/group_right are
// skipped; every other identifier is a metric name. Selecting by
// {__name__=…} is refused: the name would hide from this check.
func metricNames(expr string) ([]string, error) {
	var names []string
	s := expr
	i := 0
	skipSpace := func(j int) int {
		for j < len(s) && strings.ContainsRune(" \t\r\n", rune(s[j])) {
			j++
		}
		return j
	}
	for i < len(s) {
		c := s[i]
		switch {
		case strings.ContainsRune(" \t\r\n,()+-*/%^=!<>@", rune(c)):
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j, err := skipString(s, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '{' || c == '[':
			close := byte('}')
			if c == '[' {
				close = ']'
			}
			j := i + 1
			for j < len(s) && s[j] != close {
				if q := s[j]; q == '"' || q == '\'' || q == '`' {
					k, err := skipString(s, j)
					if err != nil {
						return nil, err
					}
					j = k
					continue
				}
				j++
			}
			if j == len(s) {
				return nil, fmt.Errorf("unclosed %c at %d in %q", c, i, expr)
			}
			if c == '{' && strings.Contains(s[i:j], "__name__") {
				return nil, fmt.Errorf("%q selects by __name__", expr)
			}
			i = j + 1
		case c == '$':
			i++
			if i < len(s) && s[i] == '{' {
				for i < len(s) && s[i] != '}' {
					i++
				}
				i++
				continue
			}
			for i < len(s) && isIdent(s[i], true) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isIdent(s[i], true) || s[i] == '.') {
				i++
			}
		case isIdent(c, false):
			j := i
			for j < len(s) && isIdent(s[j], true) {
				j++
			}
			word := s[i:j]
			next := skipSpace(j)
			switch {
			case next < len(s) && s[next] == '(' && !promqlKeywords[word]:
				// a function call
			case labelLists[word]:
				if next < len(s) && s[next] == '(' {
					k := strings.IndexByte(s[next:], ')')
					if k < 0 {
						return nil, fmt.Errorf("unclosed label list after %s in %q", word, expr)
					}
					j = next + k + 1
				}
			case promqlKeywords[word]:
			default:
				if !slices.Contains(names, word) {
					names = append(names, word)
				}
			}
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d in %q", c, i, expr)
		}
	}
	return names, nil
}

func isIdent(c byte, inner bool) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || inner && c >= '0' && c <= '9'
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) (int, error) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q != '`':
			j++
		case s[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unclosed string at %d in %q", i, s)
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, expr string
		want       []string
		err        bool
	}{
		{"bare", "up", []string{"up"}, false},
		{"matchers and range", `rate(a_total{code=~"5..", route="/v1/x{y}"}[5m])`, []string{"a_total"}, false},
		{"aggregation with by before", `sum by (namespace, le) (rate(b_bucket[$__rate_interval]))`, []string{"b_bucket"}, false},
		{"aggregation with by after", `sum(rate(c[5m])) without (pod)`, []string{"c"}, false},
		{"binary operators and vector matching", `a / on (namespace) group_left (version) b > 0.5 and ignoring(x) c unless d or e`,
			[]string{"a", "b", "c", "d", "e"}, false},
		{"numbers, durations, offset, @", "time() - max(x offset 1d) > 3 * 3600 + 1e3 + 0x1f @ start()", []string{"x"}, false},
		{"keyword-like names are metrics", "sum_total + by_zone", []string{"sum_total", "by_zone"}, false},
		{"grafana variables", `count by (version) (d{namespace=~"$namespace"}) * $factor + ${other}`, []string{"d"}, false},
		{"histogram_quantile", `histogram_quantile(0.99, sum by (le) (rate(h_bucket{route="/a"}[5m])))`, []string{"h_bucket"}, false},
		{"comments and strings", "# a comment naming nothing\nlabel_replace(m, \"dst\", \"$1\", \"src\", \"(.*)\")", []string{"m"}, false},
		{"subquery", "max_over_time(rate(s[5m])[1h:5m])", []string{"s"}, false},
		{"once each", "a + a", []string{"a"}, false},
		{"__name__", `{__name__="x"}`, nil, true},
		{"unclosed", `a{b="c"`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := metricNames(tt.expr)
			if (err != nil) != tt.err {
				t.Fatalf("metricNames(%q) error %v, want error %v", tt.expr, err, tt.err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}
