package dataset_test

import (
	"fmt"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/forecast/dataset"
)

func ExampleLoad() {
	data := `datetime_utc,ci_direct,ci_lifecycle,wind_mwh
2021-01-01T00:00:00Z,100,150,10
2021-01-01T01:00:00Z,,160,11
2021-01-01T02:00:00Z,120,170,12
`
	t, issues, err := dataset.Load(strings.NewReader(data), "DE.csv")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, is := range issues {
		fmt.Println(is)
	}
	fmt.Println(t.Zone, t.Start.Format("2006-01-02T15:04Z"), t.Series(forecast.SignalDirect).Values, t.Sources["wind"])
	// Output:
	// DE.csv:3: warning: ci_direct: empty value; treated as missing
	// DE.csv:3: warning: ci_direct missing for 1 hour(s) from 2021-01-01T01:00:00Z to 2021-01-01T01:00:00Z; filled by linear interpolation between 100 and 120
	// DE 2021-01-01T00:00Z [100 110 120] [10 11 12]
}
