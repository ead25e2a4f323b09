package cratedb

import (
	"strconv"
	"strings"
)

// column is a column an INSERT writes and the array type its parameter
// is bound as.
type column struct{ name, array string }

// names returns the names of cols.
func names(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

// insertSQL returns an INSERT into table's columns of the rows of UNNEST
// over one array parameter per column ($1 … $len(cols), each cast to its
// array type; element i of every array is row i), followed by onConflict.
// A statement carries any number of rows in len(cols) parameters, which
// CrateDB parses and plans once: a multi-row VALUES list costs it a
// parameter and an expression per value, and about half the throughput.
func insertSQL(table string, cols []column, onConflict string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quote(table))
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quote(c.name))
	}
	b.WriteString(") SELECT * FROM UNNEST(")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('$')
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString("::")
		b.WriteString(c.array)
	}
	b.WriteString(") ")
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
