package dataset_test

import (
	"fmt"
	"strconv"
)

func fmtSscan(s string, v *float64) (int, error) { return fmt.Sscan(s, v) }

func strconvF(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
