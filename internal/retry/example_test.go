package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carbongate/carbongate/internal/retry"
)

// A call that fails twice with a transient error, then succeeds. Sleep and
// Rand are injected to print the pauses; in production they are left nil.
func ExamplePolicy_Do() {
	errBusy := errors.New("busy")
	calls := 0
	p := retry.Policy{
		Attempts:  4,
		Base:      time.Second,
		Cap:       10 * time.Second,
		Retryable: func(err error) bool { return errors.Is(err, errBusy) },
		OnRetry: func(attempt int, pause time.Duration, err error) {
			fmt.Printf("call %d: %v; retrying in %v\n", attempt, err, pause)
		},
		Rand:  func() float64 { return 0.5 },
		Sleep: func(context.Context, time.Duration) error { return nil },
	}
	err := p.Do(context.Background(), func(context.Context) error {
		if calls++; calls < 3 {
			return errBusy
		}
		return nil
	})
	fmt.Println(calls, "calls, error:", err)
	// Output:
	// call 1: busy; retrying in 750ms
	// call 2: busy; retrying in 1.5s
	// 3 calls, error: <nil>
}
