package main

import (
	"fmt"
	"log"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// runner is the testing.TB that package cluster's set-up runs with here:
// logs go to the standard logger, a fatal failure ends the set-up's
// goroutine (as in a test) and the cleanups run at close, not when the
// set-up returns, so the cluster stays up in between. Methods the set-up
// does not call are left to the nil embedded TB (they would panic).
type runner struct {
	testing.TB
	tmp string

	mu       sync.Mutex
	failed   bool
	cleanups []func()
	temps    int
}

func newRunner(tmp string) *runner { return &runner{tmp: tmp} }

// run runs f in a goroutine of its own, as a test function runs, and
// reports whether it ended without a failure.
func (r *runner) run(f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
	return !r.Failed()
}

// close runs the cleanups, last registered first, and reports whether
// nothing failed.
func (r *runner) close() bool {
	r.mu.Lock()
	cleanups := slices.Clone(r.cleanups)
	r.cleanups = nil
	r.mu.Unlock()
	for _, f := range slices.Backward(cleanups) {
		r.run(f)
	}
	os.RemoveAll(r.tmp)
	return !r.Failed()
}

func (r *runner) Helper()                    {}
func (r *runner) Name() string               { return "kube-up" }
func (r *runner) Log(args ...any)            { log.Print(args...) }
func (r *runner) Logf(f string, args ...any) { log.Printf(f, args...) }
func (r *runner) Error(args ...any)          { r.fail(fmt.Sprint(args...)) }
func (r *runner) Errorf(f string, args ...any) {
	r.fail(fmt.Sprintf(f, args...))
}
func (r *runner) Fatal(args ...any)            { r.fail(fmt.Sprint(args...)); runtime.Goexit() }
func (r *runner) Fatalf(f string, args ...any) { r.fail(fmt.Sprintf(f, args...)); runtime.Goexit() }
func (r *runner) FailNow()                     { r.fail("failed"); runtime.Goexit() }

func (r *runner) fail(msg string) {
	log.Print("FAIL: ", msg)
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
}

func (r *runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// TempDir makes a new directory under the state's tmp.
func (r *runner) TempDir() string {
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
