package dataset_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
)

const hdrA = "datetime_utc,ci_direct,ci_lifecycle,wind_mwh\n"

// csvA builds a layout A file from rows "hour,direct,lifecycle,wind", hour
// being an offset from 2021-01-01T00:00Z, or from raw rows starting with '@'.
func csvA(rows ...string) string {
	var b strings.Builder
	b.WriteString(hdrA)
	for _, r := range rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return b.String()
}

func hour(h int) string {
	return time.Date(2021, 1, 1, h, 0, 0, 0, time.UTC).Format(time.RFC3339)
}

// rowA returns a layout A row for hour h with the given direct value and
// lifecycle = direct+100, wind = 10.
func rowA(h int, direct string) string { return hour(h) + "," + direct + "," + lc(direct) + ",10" }

func lc(direct string) string {
	var v float64
	if _, err := fmtSscan(direct, &v); err != nil {
		return "500"
	}
	return strings.TrimSuffix(strings.TrimRight(strconvF(v+100), "0"), ".")
}

var (
	t0   = time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	rows = func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = rowA(i, strconvF(float64(100+i)))
		}
		return out
	}
)

func TestLoadRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		file   string // name given to Load
		data   string
		issues []string  // substrings of the issues, in order, one per issue
		errs   []string  // substrings the error message must hold; nil = no error
		direct []float64 // want Table.Direct when no error
		start  time.Time // want Table.Start when no error (zero: t0)
	}{
		{name: "clean", data: csvA(rows(3)...), direct: []float64{100, 101, 102}},
		{
			name:   "non-UTC offset converted",
			data:   csvA(rowA(0, "100"), "2021-01-01T02:00:00+01:00,101,201,10", rowA(2, "102")),
			issues: []string{"DE.csv:3: warning: time 2021-01-01T02:00:00+01:00 is not in UTC; converted to 2021-01-01T01:00:00Z"},
			direct: []float64{100, 101, 102},
		},
		{
			name:   "naive time read as UTC",
			data:   csvA(rowA(0, "100"), "2021-01-01 01:00:00,101,201,10"),
			direct: []float64{100, 101},
		},
		{
			name:   "out of order sorted",
			data:   csvA(rowA(0, "100"), rowA(2, "102"), rowA(1, "101")),
			issues: []string{"DE.csv:4: warning: row for 2021-01-01T01:00:00Z is out of order (line 3"},
			direct: []float64{100, 101, 102},
		},
		{
			name:   "identical duplicate dropped",
			data:   csvA(rowA(0, "100"), rowA(1, "101"), rowA(1, "101.0"), rowA(2, "102")),
			issues: []string{"DE.csv:4: warning: duplicate of DE.csv:3 for 2021-01-01T01:00:00Z; dropped"},
			direct: []float64{100, 101, 102},
		},
		{
			name:   "conflicting duplicate is an error",
			data:   csvA(rowA(0, "100"), rowA(1, "101"), rowA(1, "150"), rowA(2, "102")),
			issues: []string{"DE.csv:4: error: conflicts with DE.csv:3 for 2021-01-01T01:00:00Z: ci_direct is 101 there and 150 here"},
			errs:   []string{"DE.csv:4: conflicts with DE.csv:3"},
		},
		{
			name: "duplicate across an offset conflicts",
			data: csvA(rowA(0, "100"), rowA(1, "101"), "2021-01-01T02:00:00+01:00,999,1099,10"),
			issues: []string{
				"DE.csv:4: warning: time 2021-01-01T02:00:00+01:00 is not in UTC",
				"DE.csv:4: error: conflicts with DE.csv:3",
			},
			errs: []string{"DE.csv:4"},
		},
		{
			name: "empty value is a gap filled by interpolation",
			data: csvA(rowA(0, "100"), hour(1)+",,201,10", rowA(2, "110")),
			issues: []string{
				"DE.csv:3: warning: ci_direct: empty value; treated as missing",
				"DE.csv:3: warning: ci_direct missing for 1 hour(s) from 2021-01-01T01:00:00Z to 2021-01-01T01:00:00Z; filled by linear interpolation between 100 and 110",
			},
			direct: []float64{100, 105, 110},
		},
		{
			name: "non-numeric, NaN and Inf values are gaps",
			data: csvA(rowA(0, "100"), hour(1)+",abc,201,10", hour(2)+",NaN,202,10", hour(3)+",+Inf,203,10", rowA(4, "140")),
			issues: []string{
				`DE.csv:3: warning: ci_direct: "abc" is not a finite number; treated as missing`,
				`DE.csv:4: warning: ci_direct: "NaN" is not a finite number`,
				`DE.csv:5: warning: ci_direct: "+Inf" is not a finite number`,
				"DE.csv:3: warning: ci_direct missing for 3 hour(s)",
			},
			direct: []float64{100, 110, 120, 130, 140},
		},
		{
			name: "negative value is a gap",
			data: csvA(rowA(0, "100"), hour(1)+",-5,201,10", rowA(2, "102")),
			issues: []string{
				"DE.csv:3: warning: ci_direct: -5 is negative; treated as missing",
				"DE.csv:3: warning: ci_direct missing for 1 hour(s)",
			},
			direct: []float64{100, 101, 102},
		},
		{
			name: "negative source value is a gap",
			data: csvA(rowA(0, "100"), hour(1)+",101,201,-1", rowA(2, "102")),
			issues: []string{
				"DE.csv:3: warning: wind_mwh: -1 is negative",
				"DE.csv:3: warning: wind_mwh missing for 1 hour(s)",
			},
			direct: []float64{100, 101, 102},
		},
		{
			name:   "missing hours up to 6 filled",
			data:   csvA(rowA(0, "100"), rowA(7, "170")),
			issues: []string{"DE.csv:3: warning: no rows for 6 hour(s) from 2021-01-01T01:00:00Z to 2021-01-01T06:00:00Z (between DE.csv:2 and here); filled by linear interpolation"},
			direct: []float64{100, 110, 120, 130, 140, 150, 160, 170},
		},
		{
			name:   "missing hours over 6 are an error",
			data:   csvA(rowA(0, "100"), rowA(8, "180")),
			issues: []string{"DE.csv:3: error: no rows for 7 hour(s)"},
			errs:   []string{"DE.csv:3: no rows for 7 hour(s)", "gaps longer than 6 hours are not filled"},
		},
		{
			name: "hole next to missing values is one gap",
			data: csvA(rowA(0, "100"), hour(1)+",,201,10", rowA(6, "160"), hour(7)+",x,207,10", hour(8)+",,208,10", rowA(9, "190")),
			issues: []string{
				"DE.csv:3: warning: ci_direct: empty value",
				"DE.csv:5: warning: ci_direct: \"x\" is not a finite number",
				"DE.csv:6: warning: ci_direct: empty value",
				"DE.csv:4: warning: no rows for 4 hour(s)",
				"DE.csv:3: warning: ci_direct missing for 5 hour(s)",
				"DE.csv:5: warning: ci_direct missing for 2 hour(s)",
			},
			direct: []float64{100, 110, 120, 130, 140, 150, 160, 170, 180, 190},
		},
		{
			name: "value gap over 6 hours is an error",
			data: csvA(rowA(0, "100"), hour(1)+",,201,10", hour(2)+",,201,10", hour(3)+",,201,10", hour(4)+",,201,10",
				hour(5)+",,201,10", hour(6)+",,201,10", hour(7)+",,201,10", rowA(8, "180")),
			issues: slices.Concat(slices.Repeat([]string{"warning: ci_direct: empty value"}, 7),
				[]string{"DE.csv:3: error: ci_direct missing for 7 hour(s)"}),
			errs: []string{"DE.csv:3: ci_direct missing for 7 hour(s)"},
		},
		{
			name: "gap at the start is an error",
			data: csvA(hour(0)+",,200,10", rowA(1, "101")),
			issues: []string{
				"DE.csv:2: warning: ci_direct: empty value",
				"DE.csv:2: error: ci_direct missing for 1 hour(s) from 2021-01-01T00:00:00Z to 2021-01-01T00:00:00Z, at the start of the series",
			},
			errs: []string{"at the start"},
		},
		{
			name: "gap at the end is an error",
			data: csvA(rowA(0, "100"), hour(1)+",101,,10"),
			issues: []string{
				"DE.csv:3: warning: ci_lifecycle: empty value",
				"DE.csv:3: error: ci_lifecycle missing for 1 hour(s)",
			},
			errs: []string{"at the end"},
		},
		{
			name:   "time not on the hour",
			data:   csvA(rowA(0, "100"), "2021-01-01T01:30:00Z,101,201,10", rowA(1, "101")),
			issues: []string{"DE.csv:3: error: time 2021-01-01T01:30:00Z is not on the hour"},
			errs:   []string{"DE.csv:3: time 2021-01-01T01:30:00Z is not on the hour"},
		},
		{
			name:   "half-hour offset is not on the hour",
			data:   csvA(rowA(0, "100"), "2021-01-01T06:00:00+05:30,101,201,10"),
			issues: []string{"warning: time 2021-01-01T06:00:00+05:30 is not in UTC", "DE.csv:3: error: time 2021-01-01T06:00:00+05:30 is not on the hour in UTC (2021-01-01T00:30:00Z)"},
			errs:   []string{"not on the hour"},
		},
		{
			name:   "unreadable time",
			data:   csvA(rowA(0, "100"), "yesterday,101,201,10", rowA(1, "101")),
			issues: []string{`DE.csv:3: error: time "yesterday" is not RFC 3339`},
			errs:   []string{`DE.csv:3: time "yesterday"`},
		},
		{
			name:   "wrong field count",
			data:   csvA(rowA(0, "100"), hour(1)+",101,201", rowA(2, "102")),
			issues: []string{"DE.csv:3: error: row has 3 fields, the header has 4", "DE.csv:4: warning: no rows for 1 hour(s)"},
			errs:   []string{"DE.csv:3"},
		},
		{
			name:   "unknown header",
			data:   "time,value\n2021-01-01T00:00:00Z,1\n",
			issues: []string{`DE.csv:1: error: unknown header starting with "time"`},
			errs:   []string{"DE.csv:1: unknown header"},
		},
		{
			name:   "missing ci_lifecycle column",
			data:   "datetime_utc,ci_direct\n2021-01-01T00:00:00Z,1\n",
			issues: []string{"DE.csv:1: error: no ci_lifecycle column"},
			errs:   []string{"no ci_lifecycle"},
		},
		{
			name:   "unknown column ignored",
			data:   "datetime_utc,ci_direct,ci_lifecycle,note\n" + hour(0) + ",1,2,hello\n",
			issues: []string{`DE.csv:1: warning: column "note" is neither`},
			direct: []float64{1},
		},
		{
			name:   "byte-order mark",
			data:   "\ufeff" + csvA(rows(2)...),
			direct: []float64{100, 101},
		},
		{
			name:   "empty file",
			data:   "",
			issues: []string{"DE.csv: error: empty file"},
			errs:   []string{"empty file"},
		},
		{
			name:   "header only",
			data:   hdrA,
			issues: []string{"DE.csv: error: no usable data rows"},
			errs:   []string{"no usable data rows"},
		},
		{
			name:   "malformed quote",
			data:   csvA(rowA(0, "100"), hour(1)+`,"10"1,201,10`),
			issues: []string{"DE.csv:3: error: malformed CSV"},
			errs:   []string{"malformed CSV"},
		},
		{
			name:   "zone not in the file name",
			file:   "my data.csv",
			data:   csvA(rows(2)...),
			issues: []string{"my data.csv: error: cannot tell the zone from the file name"},
			errs:   []string{"cannot tell the zone"},
		},
		{
			name:   "zone from a gzip file name with directories",
			file:   "some/dir/DE.csv.gz",
			data:   csvA(rows(2)...),
			direct: []float64{100, 101},
		},
		{
			name: "layout B mixed zones",
			data: hdrB + "2021-01-01 00:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n" +
				"2021-01-01 01:00:00,France,France,FR,80,90,45,37,entsoe.eu,false,\n",
			issues: []string{"DE.csv:3: error: Zone id FR differs from DE (line 2); a file must hold one zone"},
			errs:   []string{"Zone id FR differs"},
		},
		{
			name:   "layout B header differs",
			data:   strings.Replace(hdrB, "CFE%", "CFE", 1) + "2021-01-01 00:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n",
			issues: []string{`DE.csv:1: error: Electricity Maps header column 7 is "Carbon-free energy percentage (CFE)"`},
			errs:   []string{"Electricity Maps header"},
		},
		{
			name:   "layout B zone from the column",
			file:   "export.csv",
			data:   hdrB + "2021-01-01 00:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n",
			direct: []float64{380},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			file := tc.file
			if file == "" {
				file = "DE.csv"
			}
			tb, issues, err := dataset.Load(strings.NewReader(tc.data), file)
			checkIssues(t, issues, tc.issues)
			if tc.errs != nil {
				if err == nil {
					t.Fatalf("err=nil, want an error")
				}
				if got, want := forecast.ErrorCode(err), forecast.EINVALID; got != want {
					t.Errorf("code=%q, want %q", got, want)
				}
				for _, s := range tc.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tb != nil {
					t.Errorf("table=%v, want nil on error", tb)
				}
				return
			}
			if err != nil {
				t.Fatalf("err=%v", err)
			}
			checkTable(t, tb)
			if !slices.Equal(tb.Direct, tc.direct) {
				t.Errorf("Direct=%v, want %v", tb.Direct, tc.direct)
			}
			start := tc.start
			if start.IsZero() {
				start = t0
			}
			if !tb.Start.Equal(start) {
				t.Errorf("Start=%v, want %v", tb.Start, start)
			}
		})
	}
}

const hdrB = dataset.HeaderB + "\n"

// checkIssues compares issues with substrings, one per issue, in order.
func checkIssues(t *testing.T, got []dataset.Issue, want []string) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = strings.Contains(got[i].String(), want[i])
	}
	if !ok {
		var b strings.Builder
		for _, is := range got {
			b.WriteString("\n\t" + is.String())
		}
		t.Errorf("issues:%s\nwant (substrings):\n\t%s", b.String(), strings.Join(want, "\n\t"))
	}
}

// checkTable asserts the invariants every returned Table keeps.
func checkTable(tb testing.TB, t *dataset.Table) {
	tb.Helper()
	if t == nil {
		tb.Fatal("table is nil")
	}
	if t.Start.Location() != time.UTC || !t.Start.Equal(t.Start.Truncate(time.Hour)) {
		tb.Fatalf("Start %v is not UTC and hour-aligned", t.Start)
	}
	if _, err := forecast.ParseZone(string(t.Zone)); err != nil {
		tb.Fatalf("zone %q: %v", t.Zone, err)
	}
	n := len(t.Direct)
	if n == 0 {
		tb.Fatal("empty table")
	}
	cols := map[string][]float64{"direct": t.Direct, "lifecycle": t.Lifecycle}
	for k, v := range t.Sources {
		cols[k] = v
	}
	for k, v := range cols {
		if len(v) != n {
			tb.Fatalf("len(%s)=%d, want %d", k, len(v), n)
		}
		for i, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				tb.Fatalf("%s[%d]=%v", k, i, x)
			}
		}
	}
	if got, want := t.End(), t.Start.Add(time.Duration(n)*time.Hour); !got.Equal(want) {
		tb.Fatalf("End=%v, want %v", got, want)
	}
}

func TestLayoutBFixture(t *testing.T) {
	t.Parallel()
	tb, issues, err := dataset.LoadFile(filepath.Join("testdata", "electricitymaps_DE_2021-01-01_hourly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	checkIssues(t, issues, nil)
	checkTable(t, tb)
	if got, want := tb.Zone, forecast.Zone("DE"); got != want {
		t.Errorf("Zone=%q, want %q", got, want)
	}
	if got, want := tb.Len(), 24; got != want {
		t.Errorf("Len=%d, want %d", got, want)
	}
	if !tb.Start.Equal(t0) {
		t.Errorf("Start=%v, want %v", tb.Start, t0)
	}
	if got, want := tb.Direct[0], 380.0; got != want {
		t.Errorf("Direct[0]=%v, want %v", got, want)
	}
	if got, want := tb.Lifecycle[0], 445.6; got != want {
		t.Errorf("Lifecycle[0]=%v, want %v", got, want)
	}
	if len(tb.Sources) != 0 {
		t.Errorf("Sources=%v, want none", tb.Sources)
	}
	if got, want := tb.Series(forecast.SignalLifecycle).Values[1], tb.Lifecycle[1]; got != want {
		t.Errorf("Series(lifecycle)[1]=%v, want %v", got, want)
	}
}

func TestLoaderZone(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "electricitymaps_DE_2021-01-01_hourly.csv"))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = dataset.Loader{Zone: "FR"}.Load(bytes.NewReader(data), "export.csv")
	if err == nil || !strings.Contains(err.Error(), "Zone id DE, but the file is loaded as zone FR") {
		t.Fatalf("err=%v, want a zone conflict", err)
	}
	tb, _, err := dataset.Loader{Zone: "FR"}.Load(strings.NewReader(csvA(rows(2)...)), "anything.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tb.Zone, forecast.Zone("FR"); got != want {
		t.Fatalf("Zone=%q, want %q", got, want)
	}
}

func TestMaxGap(t *testing.T) {
	t.Parallel()
	data := csvA(rowA(0, "100"), rowA(4, "140")) // 3 missing hours
	if _, _, err := (dataset.Loader{MaxGap: 2}).Load(strings.NewReader(data), "DE.csv"); err == nil {
		t.Error("MaxGap 2 filled a 3-hour gap")
	}
	if _, _, err := (dataset.Loader{MaxGap: 3}).Load(strings.NewReader(data), "DE.csv"); err != nil {
		t.Errorf("MaxGap 3: %v", err)
	}
	if _, _, err := (dataset.Loader{MaxGap: -1}).Load(strings.NewReader(csvA(rowA(0, "1"), rowA(2, "2"))), "DE.csv"); err == nil {
		t.Error("MaxGap -1 filled a gap")
	}
}

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGzip(t *testing.T) {
	t.Parallel()
	// Detected by content, whatever the name says.
	tb, _, err := dataset.Load(bytes.NewReader(gz(t, csvA(rows(3)...))), "DE.csv")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tb.Len(), 3; got != want {
		t.Fatalf("Len=%d, want %d", got, want)
	}
	// A truncated stream is an error, not a short table.
	b := gz(t, csvA(rows(200)...))
	_, _, err = dataset.Load(bytes.NewReader(b[:len(b)/2]), "DE.csv.gz")
	if err == nil || !strings.Contains(err.Error(), "read error") {
		t.Fatalf("err=%v, want a read error", err)
	}
}

func TestWriteCSVRoundTrip(t *testing.T) {
	t.Parallel()
	tb, _, err := dataset.LoadFile(filepath.Join("testdata", "SE.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tb.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.SplitN(buf.String(), "\n", 2)[0], "datetime_utc,ci_direct,ci_lifecycle,hydro_mwh,nuclear_mwh,unknown_mwh,wind_mwh"; got != want {
		t.Errorf("header=%q, want %q", got, want)
	}
	back, issues, err := dataset.Load(&buf, "SE.csv")
	if err != nil || len(issues) > 0 {
		t.Fatalf("reload: %v %v", err, issues)
	}
	assertSameTable(t, back, tb)
}

func assertSameTable(t *testing.T, got, want *dataset.Table) { assertSameTableTB(t, got, want) }

func assertSameTableTB(t testing.TB, got, want *dataset.Table) {
	t.Helper()
	if got.Zone != want.Zone || !got.Start.Equal(want.Start) || !slices.Equal(got.Direct, want.Direct) || !slices.Equal(got.Lifecycle, want.Lifecycle) {
		t.Fatalf("tables differ:\n got %s %v %v %v\nwant %s %v %v %v", got.Zone, got.Start, got.Direct, got.Lifecycle, want.Zone, want.Start, want.Direct, want.Lifecycle)
	}
	if !slices.Equal(got.SourceNames(), want.SourceNames()) {
		t.Fatalf("sources %v, want %v", got.SourceNames(), want.SourceNames())
	}
	for k, v := range want.Sources {
		if !slices.Equal(got.Sources[k], v) {
			t.Fatalf("source %s differs", k)
		}
	}
}

func TestSeries(t *testing.T) {
	t.Parallel()
	tb := &dataset.Table{Zone: "DE", Start: t0, Direct: []float64{1, 2}, Lifecycle: []float64{3, 4}}
	for _, tc := range []struct {
		sig  forecast.Signal
		want []float64
	}{
		{forecast.SignalDirect, []float64{1, 2}},
		{forecast.SignalLifecycle, []float64{3, 4}},
		{"", []float64{3, 4}},
		{"marginal", nil},
	} {
		s := tb.Series(tc.sig)
		if !slices.Equal(s.Values, tc.want) || !s.Start.Equal(t0) {
			t.Errorf("Series(%q)=%v, want %v", tc.sig, s, tc.want)
		}
	}
	if got, want := tb.End(), t0.Add(2*time.Hour); !got.Equal(want) {
		t.Errorf("End=%v, want %v", got, want)
	}
}

func TestLoadFS(t *testing.T) {
	t.Parallel()
	period := func(from, to int, direct func(int) int) string {
		var rs []string
		for h := from; h < to; h++ {
			rs = append(rs, rowA(h, strconvF(float64(direct(h)))))
		}
		return csvA(rs...)
	}
	id := func(h int) int { return 100 + h }
	tests := []struct {
		name   string
		fs     fstest.MapFS
		issues []string
		errs   []string
		zones  map[forecast.Zone]int // zone -> hours
	}{
		{
			name: "files and folders",
			fs: fstest.MapFS{
				"data/DE.csv":          {Data: []byte(period(0, 5, id))},
				"data/SE.csv.gz":       {Data: gz(t, period(0, 3, id))},
				"data/PL/2021-a.csv":   {Data: []byte(period(0, 4, id))},
				"data/PL/2021-b.csv":   {Data: []byte(period(4, 10, id))},
				"data/README.md":       {Data: []byte("not data")},
				"data/.hidden/x.csv":   {Data: []byte("junk")},
				"data/_scratch.csv":    {Data: []byte("junk")},
				"data/PL/notes.txt":    {Data: []byte("junk")},
				"data/ES/2021.csv.gz":  {Data: gz(t, period(0, 2, id))},
				"data/ES/.tmp-123.csv": {Data: []byte("half written")},
			},
			zones: map[forecast.Zone]int{"DE": 5, "SE": 3, "PL": 10, "ES": 2},
		},
		{
			name: "identical overlap between periods is dropped",
			fs: fstest.MapFS{
				"data/PL/1.csv": {Data: []byte(period(0, 4, id))},
				"data/PL/2.csv": {Data: []byte(period(3, 6, id))},
			},
			issues: []string{"data/PL/2.csv:2: warning: duplicate of data/PL/1.csv:5 for 2021-01-01T03:00:00Z; dropped"},
			zones:  map[forecast.Zone]int{"PL": 6},
		},
		{
			name: "conflicting overlap between periods",
			fs: fstest.MapFS{
				"data/PL/1.csv": {Data: []byte(period(0, 4, id))},
				"data/PL/2.csv": {Data: []byte(period(3, 6, func(h int) int { return 200 + h }))},
			},
			issues: []string{"data/PL/2.csv:2: error: conflicts with data/PL/1.csv:5"},
			errs:   []string{"data/PL/2.csv:2: conflicts"},
		},
		{
			name: "short hole between periods filled",
			fs: fstest.MapFS{
				"data/PL/1.csv": {Data: []byte(period(0, 4, id))},
				"data/PL/2.csv": {Data: []byte(period(6, 8, id))},
			},
			issues: []string{"data/PL/2.csv:2: warning: no rows for 2 hour(s) from 2021-01-01T04:00:00Z to 2021-01-01T05:00:00Z (between data/PL/1.csv:5 and here); filled"},
			zones:  map[forecast.Zone]int{"PL": 8},
		},
		{
			name: "long hole between periods",
			fs: fstest.MapFS{
				"data/PL/1.csv": {Data: []byte(period(0, 4, id))},
				"data/PL/2.csv": {Data: []byte(period(20, 22, id))},
			},
			issues: []string{"data/PL/2.csv:2: error: no rows for 16 hour(s)"},
			errs:   []string{"no rows for 16"},
		},
		{
			name: "periods out of order",
			fs: fstest.MapFS{
				"data/PL/1.csv": {Data: []byte(period(10, 12, id))},
				"data/PL/2.csv": {Data: []byte(period(0, 10, id))},
			},
			issues: []string{"data/PL/2.csv:2: error: period starts at 2021-01-01T00:00:00Z, before the previous period data/PL/1.csv"},
			errs:   []string{"period starts"},
		},
		{
			name: "source not in every period is dropped",
			fs: fstest.MapFS{
				"data/DE/1.csv": {Data: []byte(period(0, 2, id))},
				"data/DE/2.csv": {Data: []byte(hdrB + "2021-01-01 02:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n")},
			},
			issues: []string{"data/DE/1.csv:1: warning: source wind_mwh is not in every period of zone DE; dropped"},
			zones:  map[forecast.Zone]int{"DE": 3},
		},
		{
			name: "layout B zone must match the folder",
			fs: fstest.MapFS{
				"data/FR/1.csv": {Data: []byte(hdrB + "2021-01-01 02:00:00,Germany,Germany,DE,380,445,45,37,entsoe.eu,false,\n")},
			},
			issues: []string{"data/FR/1.csv:2: error: Zone id DE, but data/FR holds zone FR"},
			errs:   []string{"Zone id DE"},
		},
		{
			name: "zone given twice",
			fs: fstest.MapFS{
				"data/DE.csv":   {Data: []byte(period(0, 2, id))},
				"data/DE/1.csv": {Data: []byte(period(0, 2, id))},
			},
			issues: []string{"data/DE.csv: error: zone DE is also given by data/DE; give each zone once"},
			errs:   []string{"zone DE is also given"},
		},
		{
			name:   "bad file name",
			fs:     fstest.MapFS{"data/germany 2021.csv": {Data: []byte(period(0, 2, id))}},
			issues: []string{"data/germany 2021.csv: error: file is not named <zone>.csv"},
			errs:   []string{"not named"},
		},
		{
			name: "bad folder name skipped",
			fs: fstest.MapFS{
				"data/old data/1.csv": {Data: []byte(period(0, 2, id))},
				"data/DE.csv":         {Data: []byte(period(0, 2, id))},
			},
			issues: []string{"data/old data: warning: folder is not named after a zone"},
			zones:  map[forecast.Zone]int{"DE": 2},
		},
		{
			name:   "empty zone folder",
			fs:     fstest.MapFS{"data/DE/readme.txt": {Data: []byte("x")}},
			issues: []string{"data/DE: error: zone folder holds no .csv or .csv.gz file"},
			errs:   []string{"no .csv"},
		},
		{
			name:   "nothing to load",
			fs:     fstest.MapFS{"data/readme.txt": {Data: []byte("x")}},
			issues: []string{"data: error: no <zone>.csv"},
			errs:   []string{"no <zone>.csv"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tables, issues, err := dataset.LoadFS(tc.fs, "data")
			checkIssues(t, issues, tc.issues)
			if tc.errs != nil {
				if err == nil {
					t.Fatal("err=nil, want an error")
				}
				for _, s := range tc.errs {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				if tables != nil {
					t.Errorf("tables=%v, want nil", tables)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(tables), len(tc.zones); got != want {
				t.Errorf("zones=%d, want %d", got, want)
			}
			for z, n := range tc.zones {
				tb := tables[z]
				checkTable(t, tb)
				if tb.Zone != z || tb.Len() != n || !tb.Start.Equal(t0) {
					t.Errorf("%s: zone %s, %d hours from %v; want %d hours from %v", z, tb.Zone, tb.Len(), tb.Start, n, t0)
				}
			}
		})
	}
}

func TestLoadDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "SE"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join("testdata", "SE.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SE", "2020.csv"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	tables, issues, err := dataset.LoadDir(dir)
	if err != nil || len(issues) != 0 {
		t.Fatalf("LoadDir: %v %v", err, issues)
	}
	if got, want := tables["SE"].Len(), 48; got != want {
		t.Fatalf("SE hours=%d, want %d", got, want)
	}
	_, _, err = dataset.LoadDir(filepath.Join(dir, "missing"))
	if got, want := forecast.ErrorCode(err), forecast.ENOTFOUND; got != want {
		t.Fatalf("missing dir: code %q (%v), want %q", got, err, want)
	}
	_, _, err = dataset.LoadFile(filepath.Join(dir, "missing.csv"))
	var fe *forecast.Error
	if !errors.As(err, &fe) || fe.Code != forecast.ENOTFOUND {
		t.Fatalf("missing file: %v, want ENOTFOUND", err)
	}
}

func TestIssueString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		is   dataset.Issue
		want string
	}{
		{dataset.Issue{File: "a.csv", Line: 3, Severity: "warning", Message: "m"}, "a.csv:3: warning: m"},
		{dataset.Issue{File: "a.csv", Severity: "error", Message: "m"}, "a.csv: error: m"},
	} {
		if got := tc.is.String(); got != tc.want {
			t.Errorf("String()=%q, want %q", got, tc.want)
		}
	}
}

func TestErrorListsFirstIssues(t *testing.T) {
	t.Parallel()
	var rs []string
	for h := range 10 {
		rs = append(rs, hour(h)+",1,2,3,4")
	}
	_, issues, err := dataset.Load(strings.NewReader(csvA(rs...)), "DE.csv")
	if got, want := len(issues), 11; got != want { // 10 field-count errors + no rows
		t.Fatalf("issues=%d, want %d", got, want)
	}
	msg := err.Error()
	for _, s := range []string{"11 error(s)", "DE.csv:2:", "DE.csv:6:", "and 6 more"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}
	if strings.Contains(msg, "DE.csv:7:") {
		t.Errorf("error %q lists more than 5 issues", msg)
	}
}
