//go:build !unix

package embedded

import (
	"os"

	"github.com/carbongate/carbongate/forecast"
)

// lockFile fails: the embedded store needs flock to keep a second process
// away from the file.
func lockFile(path string) (*os.File, error) {
	return nil, forecast.Errorf(forecast.EUNAVAILABLE, "embedded: file locking is not supported on this system")
}

func unlockFile(f *os.File) error { return f.Close() }
