package abuse

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/carbongate/carbongate/gateway/casdk"
)

// A year of the bundled data, before the replay clock's start.
const amplifyPeriod = "&time=2020-05-31T00:00:00Z&toTime=2021-05-31T23:00:00Z"

// amplifyURLs are the SDK API requests that name the most work a URL can:
// one location given 100 times over a year (read and answered once), 8
// distinct locations over a year (the largest answer allowed), and 12
// over a year (over the bound: 400).
var amplifyURLs = func() []string {
	zones := []string{"DE", "NL", "ES", "SE", "PL", "US-CAL-CISO", "US-MIDA-PJM", "US-TEX-ERCO", "US-NE-ISNE", "US-NY-NYIS", "US-FLA-FPL", "US-NW-BPAT"}
	repeated := "location=DE" + strings.Repeat("&location=DE", 99) + amplifyPeriod
	return []string{
		"/casdk/emissions/bylocations?" + repeated,
		"/casdk/emissions/bylocations/best?" + repeated,
		"/casdk/emissions/bylocations?location=" + strings.Join(zones[:8], "&location=") + amplifyPeriod,
		"/casdk/emissions/bylocations/best?location=" + strings.Join(zones, "&location=") + amplifyPeriod,
	}
}()

// maxAnswerBytes bounds an SDK answer: DefaultMaxPoints values of at
// most 100 bytes each (a year of 100 × DE was a 75 MB answer).
const maxAnswerBytes = casdk.DefaultMaxPoints * 100

// amplified sends amplifyURLs in turn over keep-alive connections: each
// must be answered 200 within maxAnswerBytes, 400, or 503 (shed);
// anything else is a violation.
func amplified(workers, rate int) func(context.Context, *target, *tally) {
	return func(ctx context.Context, tg *target, tl *tally) {
		hc := keepAlive.client()
		defer hc.CloseIdleConnections()
		paced(ctx, workers, rate, func(ctx context.Context, i int) {
			url := amplifyURLs[i%len(amplifyURLs)]
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tg.addr+url, nil)
			if err != nil {
				tl.violation("building request", err.Error())
				return
			}
			resp, err := hc.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					tl.violation("amplifying request got no answer", errKind(err))
				}
				return
			}
			n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes+1))
			resp.Body.Close()
			switch {
			case ctx.Err() != nil:
			case err != nil:
				tl.violation("amplifying request's answer cut", errKind(err))
			case n > maxAnswerBytes:
				tl.violation("answer over "+strconv.Itoa(maxAnswerBytes)+" bytes", fmt.Sprintf("%d: %.120s", resp.StatusCode, url))
			case resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusServiceUnavailable:
				tl.add("answered " + strconv.Itoa(resp.StatusCode))
			default:
				tl.violation(fmt.Sprintf("amplifying request answered %d", resp.StatusCode), url)
			}
		})
	}
}
