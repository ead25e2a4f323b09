package services

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// Runner is a testing.TB for a command that holds test peers up outside a
// test (make kube-up's kubeup, make karmada-up's karmadaup): logs go to the
// standard logger, a fatal failure ends the set-up's
// goroutine (as in a test) and the cleanups run at close, not when the
// set-up returns, so the peers stay up in between. Methods the set-up
// does not call are left to the nil embedded TB (they would panic).
type Runner struct {
	testing.TB
	name, tmp string

	mu       sync.Mutex
	failed   bool
	cleanups []func()
	temps    int
}

// NewRunner returns a Runner called name (its Name) whose TempDir makes
// directories under tmp.
func NewRunner(name, tmp string) *Runner { return &Runner{name: name, tmp: tmp} }

// Run runs f in a goroutine of its own, as a test function runs, and
// reports whether it ended without a failure.
func (r *Runner) Run(f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	return !r.Failed()
}

// Close runs the cleanups, last registered first, and reports whether
// nothing failed.
func (r *Runner) Close() bool {
	r.mu.Lock()
	cleanups := slices.Clone(r.cleanups)
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		r.Run(f)
	}
	os.RemoveAll(r.tmp)
	return !r.Failed()
}

func (r *Runner) Helper()                    {}
func (r *Runner) Name() string               { return r.name }
func (r *Runner) Log(args ...any)            { log.Print(args...) }
func (r *Runner) Logf(f string, args ...any) { log.Printf(f, args...) }
func (r *Runner) Error(args ...any)          { r.fail(fmt.Sprint(args...)) }
func (r *Runner) Errorf(f string, args ...any) {
	r.fail(fmt.Sprintf(f, args...))
}
func (r *Runner) Fatal(args ...any)            { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *Runner) Fatalf(f string, args ...any) { r.fail(fmt.Sprintf(f, args...)); runtime.Goexit() }
func (r *Runner) FailNow()                     { r.fail("failed"); runtime.Goexit() }

func (r *Runner) fail(msg string) {
	log.Print("FAIL: ", msg)
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *Runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *Runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// TempDir makes a new directory under the state's tmp.
func (r *Runner) TempDir() string {
	r.mu.Lock()
	r.temps++
	n := r.temps
	r.mu.Unlock()
	d := fmt.Sprintf("%s/%03d", r.tmp, n)
	if err := os.MkdirAll(d, 0o700); err != nil {
		r.Fatal(err)
	}
	return d
}
