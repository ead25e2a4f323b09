package testsupport

import (
	"fmt"
	"testing"
)

// Goal prints a benchmark's figure line (the line make bench shows) and
// fails tb when the goal the line states was missed, so make bench fails
// instead of printing a miss among the figures.
func Goal(tb testing.TB, met bool, format string, args ...any) {
	tb.Helper()
	line := fmt.Sprintf(format, args...)
	fmt.Println(line)
	if !met {
		tb.Errorf("goal missed: %s", line)
	}
}
