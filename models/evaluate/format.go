package evaluate

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// MarshalJSON writes a result as {"zone", "signal", "model_name",
// "model_version", "issues", "scored", "skipped", "first_issue",
// "last_issue", "metrics": {name: value}, "mape_by_lead_hour": [...]};
// values without data are null.
func (r Result) MarshalJSON() ([]byte, error) {
	ms := map[string]*float64{}
	for n, v := range r.Metrics() {
		ms[n] = num(v)
	}
	hours := make([]*float64, len(r.ByLeadHour))
	for i, v := range r.ByLeadHour {
		hours[i] = num(v)
	}
	return json.Marshal(struct {
		Key
		Issues  int                 `json:"issues"`
		Scored  int                 `json:"scored"`
		Skipped int                 `json:"skipped"`
		First   string              `json:"first_issue,omitempty"`
		Last    string              `json:"last_issue,omitempty"`
		Metrics map[string]*float64 `json:"metrics"`
		Hours   []*float64          `json:"mape_by_lead_hour"`
	}{r.Key, r.Issues, r.Scored, r.Skipped, stamp(r.First), stamp(r.Last), ms, hours})
}

func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// WriteJSON writes rep as indented JSON: {"lead_days", "results": [...]}
// with results in report order (see Result.MarshalJSON).
func WriteJSON(w io.Writer, rep *Report) error {
	b, err := json.MarshalIndent(struct {
		LeadDays int      `json:"lead_days"`
		Results  []Result `json:"results"`
	}{rep.LeadDays, rep.Results}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteTable writes rep as an aligned text table, one row per key: issues
// scored/skipped, mean MAPE per lead day, median and p90 of the day-1
// MAPEs, mean day-1 MAE, and interval coverage and width over all scored
// hours ("-" where there is no data).
func WriteTable(w io.Writer, rep *Report) error {
	header := []string{"zone", "signal", "model", "version", "scored", "skipped"}
	for d := 1; d <= rep.LeadDays; d++ {
		header = append(header, fmt.Sprintf("mape_d%d", d))
	}
	header = append(header, "mape_d1_median", "mape_d1_p90", "mae_d1", "coverage", "width")
	rows := [][]string{header}
	for _, r := range rep.Results {
		row := []string{string(r.Zone), string(r.Signal), r.ModelName, r.ModelVersion,
			strconv.Itoa(r.Scored), strconv.Itoa(r.Skipped)}
		for _, d := range r.Days {
			row = append(row, cell(d.MAPE.Mean, 2))
		}
		var d1 Day
		if len(r.Days) > 0 {
			d1 = r.Days[0]
		}
		row = append(row, cell(d1.MAPE.Median, 2), cell(d1.MAPE.P90, 2), cell(d1.MAE.Mean, 1),
			cell(100*r.Coverage, 1), cell(r.Width, 1))
		rows = append(rows, row)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "MAPE %% per lead day (mean over issued forecasts), day-1 MAPE median and p90, day-1 MAE, interval coverage (%% of hours, as the in-process table) and width\n")
	writeAligned(&b, rows, 4)
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// writeAligned writes rows with two spaces between columns: the first
// textCols columns left-aligned, the others right-aligned.
func writeAligned(b *strings.Builder, rows [][]string, textCols int) {
	var width []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(width) {
				width = append(width, 0)
			}
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i > 0 {
				line.WriteString("  ")
			}
			if i < textCols {
				line.WriteString(c + pad)
			} else {
				line.WriteString(pad + c)
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
}
