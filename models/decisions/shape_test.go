package decisions_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/models/decisions"
)

func TestParseShape(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" for EINVALID
	}{
		{"3h/24h", "3h/24h"},
		{" 1h / 12h ", "1h/12h"},
		{"120m/48h", "2h/48h"},
		{"1h/12h@DE+SE", "1h/12h@DE+SE"},
		{"8h/8h", "8h/8h"},
		{"3h", ""},
		{"0h/2h", ""},
		{"90m/3h", ""},
		{"3h/2h", ""},
		{"1h/150m", ""},
		{"1h/721h", ""},
		{"1h/2h@DE+DE", ""},
		{"1h/2h@", ""},
		{"x/2h", ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, err := decisions.ParseShape(tc.in)
			if tc.want == "" {
				if forecast.ErrorCode(err) != forecast.EINVALID || forecast.ErrorField(err) != "shapes" {
					t.Fatalf("ParseShape(%q) = %v, %v; want EINVALID on shapes", tc.in, s, err)
				}
				return
			}
			if err != nil || s.String() != tc.want {
				t.Fatalf("ParseShape(%q) = %q, %v; want %q", tc.in, s, err, tc.want)
			}
		})
	}
}

func TestDefaultAndReadShapes(t *testing.T) {
	d := decisions.DefaultShapes()
	if len(d) != 3 || d[2].Duration != 8*time.Hour || d[2].Slack != 48*time.Hour {
		t.Fatalf("default shapes %v", d)
	}
	if parsed, err := decisions.ParseShapes(decisions.DefaultShapeList); err != nil || !reflect.DeepEqual(parsed, d) {
		t.Fatalf("ParseShapes(DefaultShapeList) = %v, %v; want DefaultShapes() %v", parsed, err, d)
	}
	got, err := decisions.ReadShapes(strings.NewReader("# jobs\n1h/12h\n\n3h/24h@DE+PL\n"))
	if err != nil || len(got) != 2 || got[1].String() != "3h/24h@DE+PL" {
		t.Fatalf("ReadShapes = %v, %v", got, err)
	}
	_, err = decisions.ReadShapes(strings.NewReader("1h/12h\n3h\n"))
	if forecast.ErrorCode(err) != forecast.EINVALID || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("ReadShapes of a bad line: %v, want EINVALID naming line 2", err)
	}
	if _, err := decisions.ReadShapes(strings.NewReader("# none\n")); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("ReadShapes of no shape: %v, want EINVALID", err)
	}
	if _, err := decisions.ParseShapes(" , "); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("ParseShapes of no shape: %v, want EINVALID", err)
	}
}

func TestWriteReport(t *testing.T) {
	rep := &decisions.Report{
		From: t0, To: t0, Every: "6h", Sources: []string{"x"},
		Rows: []decisions.Row{{Shape: decisions.DefaultShapes()[0], Zone: "DE", Issues: 2, RunNow: 100,
			Oracle:  decisions.Outcome{Source: decisions.Oracle, Saving: 10, SavingPct: 10, Capture: 1},
			Sources: []decisions.Outcome{{Source: "x", Saving: 5, SavingPct: 5, Capture: 0.5}}}},
		Shapes: []decisions.Summary{{Shape: decisions.DefaultShapes()[0], Issues: 2, RunNow: 100,
			Oracle:  decisions.Outcome{Source: decisions.Oracle, Saving: 0, SavingPct: 0, Capture: math.NaN()},
			Sources: []decisions.Outcome{{Source: "x", Saving: 0, SavingPct: 0, Capture: math.NaN()}}}},
		Capture: map[string]float64{"x": math.NaN()},
	}
	var b bytes.Buffer
	if err := decisions.WriteJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Rows []struct {
			Shape   struct{ Name, Duration, Slack string }
			Zone    string
			Sources []struct {
				Source  string
				Capture *float64
			}
		}
		Shapes []struct {
			Sources []struct{ Capture *float64 }
		}
		Capture map[string]*float64
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, b.String())
	}
	r := got.Rows[0]
	if r.Shape.Name != "1h/12h" || r.Shape.Slack != "12h" || r.Zone != "DE" || *r.Sources[0].Capture != 0.5 {
		t.Fatalf("JSON row %+v", r)
	}
	if got.Shapes[0].Sources[0].Capture != nil || got.Capture["x"] != nil {
		t.Fatalf("a NaN capture is not null: %s", b.String())
	}
	b.Reset()
	if err := decisions.WriteTable(&b, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "x %") || !strings.Contains(lines[1], "0.50") || !strings.HasSuffix(strings.TrimSpace(lines[3]), "-") {
		t.Fatalf("table:\n%s", b.String())
	}
}
