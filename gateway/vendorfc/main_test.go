//go:build !interop

// The interop build shares a PostgreSQL server between the tests, whose
// process outlives them.

package vendorfc

import (
	"os"
	"testing"

	"github.com/carbongate/carbongate/test/testsupport"
)

func TestMain(m *testing.M) { os.Exit(testsupport.RunLeakChecked(m)) }
