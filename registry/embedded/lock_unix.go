//go:build unix

package embedded

import (
	"errors"
	"os"
	"syscall"

	"github.com/carbongate/carbongate/forecast"
)

// lockFile opens (creating it) and exclusively locks path with flock, so a
// second process opening the same registry fails at once. The lock ends
// with unlockFile or with the process.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, unavailable("embedded: cannot open the lock file "+path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &forecast.Error{Code: forecast.EUNAVAILABLE, Err: err,
				Message: "embedded: the registry is in use by another process (" + path + " is locked)"}
		}
		return nil, unavailable("embedded: cannot lock "+path, err)
	}
	return f, nil
}

// unlockFile releases the lock and closes f.
func unlockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
