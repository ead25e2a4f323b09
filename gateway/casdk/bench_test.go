package casdk

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkByLocationsLargest is the most a request may ask for by
// default, 8 locations × a year (70,080 hourly values; the test store
// holds about 80 days of two zones), and the attack of a location given
// 100 times over a year, now read and answered once.
func BenchmarkByLocationsLargest(b *testing.B) {
	e, _ := newCountingAPI(b, Config{})
	year := "&time=2021-07-19T00:00:00Z&toTime=2022-07-19T00:00:00Z"
	for _, bc := range []struct{ name, query string }{
		{"8-locations-year", "location=" + strings.Join([]string{"northeurope", "eu-west-1", "IE", "eastus", "US-MIDA-PJM", "westus", "US-CAL-CISO", "DE"}, "&location=") + year},
		{"DE-100-times-year", "location=DE" + strings.Repeat("&location=DE", 99) + year},
	} {
		for _, route := range []string{"bylocations", "bylocations/best"} {
			b.Run(bc.name+"/"+route, func(b *testing.B) {
				b.ReportAllocs()
				url := "/casdk/emissions/" + route + "?" + bc.query
				var n int64
				for b.Loop() {
					rec := httptest.NewRecorder()
					e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
					if rec.Code != http.StatusOK {
						b.Fatalf("status %d", rec.Code)
					}
					n, _ = io.Copy(io.Discard, rec.Body)
				}
				b.ReportMetric(float64(n), "bytes/answer")
			})
		}
	}
}
