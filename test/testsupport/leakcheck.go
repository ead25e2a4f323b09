// Package testsupport holds what the project's tests share: a check for
// goroutines that outlive a test binary's tests, and a buffer that loggers
// and tests may share. Only tests import it.
//
//	func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }
package testsupport

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// module is the import-path prefix whose goroutines are checked: only
// goroutines running carbongate code count, so idle connections of the
// standard library's HTTP client do not.
const module = "github.com/carbongate/carbongate/"

// RunLeakChecked runs the tests, then waits up to 5 seconds for every goroutine that
// runs carbongate code (other than this one) to end. It returns m.Run's
// code, or 1 with the leaked stacks printed when some remain.
func RunLeakChecked(m *testing.M) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	var leaked []string
	for deadline := time.Now().Add(5 * time.Second); ; {
		leaked = Leaked()
		if len(leaked) == 0 {
			return code
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "leakcheck: %d goroutine(s) leaked:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
	return 1
}

// Leaked returns the stacks of the goroutines, other than the caller's,
// that run carbongate code.
func Leaked() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for i, g := range strings.Split(string(buf), "\n\n") {
		if i == 0 { // the calling goroutine comes first
			continue
		}
		if strings.Contains(g, module) && !strings.Contains(g, module+"test/testsupport") &&
			!strings.Contains(g, "testing.(*M).Run") && !strings.Contains(g, "testing.tRunner") {
			out = append(out, g)
		}
	}
	return out
}
