package cratedb

import (
	"strconv"
	"strings"
)

// insertSQL returns a multi-row INSERT of n rows into table's columns,
// with $1 … $n·len(cols) placeholders row after row, followed by onConflict.
func insertSQL(table string, cols []string, n int, onConflict string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quote(table))
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(c))
	}
	b.WriteString(") VALUES ")
	p := 0
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			p++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
		}
		b.WriteByte(')')
	}
	b.WriteByte(' ')
	b.WriteString(onConflict)
	return b.String()
}

// upsertClause is ON CONFLICT (key) DO UPDATE SET each of set to its
// excluded value, plus extra assignments.
func upsertClause(key, set []string, extra ...string) string {
	q := make([]string, len(key))
	for i, k := range key {
		q[i] = quote(k)
	}
	assign := make([]string, 0, len(set)+len(extra))
	for _, c := range set {
		assign = append(assign, quote(c)+" = excluded."+quote(c))
	}
	assign = append(assign, extra...)
	return "ON CONFLICT (" + strings.Join(q, ", ") + ") DO UPDATE SET " + strings.Join(assign, ", ")
}

func quote(ident string) string { return `"` + ident + `"` }

// refresh makes the writes to table visible to every later read.
func refresh(table string) string { return "REFRESH TABLE " + quote(table) }
