package dataset_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/carbongate/carbongate/forecast/dataset"
)

// FuzzLoad checks that Load never panics, that it fails exactly when it
// reports an error, and that any Table it returns keeps the Table invariants
// and survives a WriteCSV/Load round trip unchanged. Seeds: the f.Add calls
// below and testdata/fuzz/FuzzLoad.
//
// fuzz budget: 40000x (make fuzz; about 4 s on a quiet 2-core machine)
func FuzzLoad(f *testing.F) {
	f.Add([]byte(csvA(rows(3)...)))
	f.Add([]byte(csvA(rowA(0, "100"), hour(1)+",,201,10", rowA(5, "150"), rowA(3, "130"), rowA(3, "130"))))
	f.Add([]byte(csvA(rowA(0, "1"), "2021-01-01T02:00:00+01:00,2,3,4", hour(2)+",-1,x,NaN")))
	f.Add([]byte(hdrB + "2021-01-01 00:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n" +
		"2021-01-01 01:00:00,Germany,Germany,DE,390,455,45,37,entsoe.eu,true,TIME_SLICER_AVERAGE\n"))
	f.Add(gz(f, csvA(rows(4)...)))
	f.Add([]byte("\ufeffdatetime_utc,ci_lifecycle,ci_direct,coal_mwh,note\n2021-01-01T00:00:00Z,1,2,3,\"a,b\"\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "DE.csv"
		tb, issues, err := dataset.Load(bytes.NewReader(data), name)
		nerr := 0
		for _, is := range issues {
			if is.File != name || is.Line < 0 || is.Message == "" {
				t.Fatalf("malformed issue %#v", is)
			}
			switch is.Severity {
			case dataset.SeverityError:
				nerr++
			case dataset.SeverityWarning:
			default:
				t.Fatalf("severity %q", is.Severity)
			}
		}
		if (err != nil) != (nerr > 0) {
			t.Fatalf("err=%v with %d error issues", err, nerr)
		}
		if err != nil {
			if tb != nil {
				t.Fatal("table and error both returned")
			}
			return
		}
		checkTable(t, tb)
		var buf bytes.Buffer
		if err := tb.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		back, issues, err := dataset.Loader{Zone: tb.Zone}.Load(&buf, name)
		if err != nil || len(issues) > 0 {
			t.Fatalf("reloading the written table: %v %v\n%s", err, issues, strings.Join(strings.SplitN(buf.String(), "\n", 5)[:2], "\n"))
		}
		assertSameTableTB(t, back, tb)
	})
}
