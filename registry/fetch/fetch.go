// Package fetch copies a model version's artifacts to a local directory,
// whatever its location: a local path or file:// URI, s3://bucket/prefix
// (registry/s3), or mlflow-artifacts:/path, which MLflow resolves against
// the server's --artifacts-destination. The destination is replaced in one
// rename, so readers see the old directory or the new one.
package fetch

import (
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/s3"
)

// Fetcher fetches artifact directories. The zero value handles local paths
// only.
type Fetcher struct {
	// S3 is the client for s3:// locations; nil: they are refused.
	S3 s3.API
	// ArtifactsDestination is what mlflow-artifacts:/X maps to
	// (ArtifactsDestination/X), as the MLflow server's
	// --artifacts-destination; "": such locations are refused.
	ArtifactsDestination string
}

// Resolve maps an mlflow-artifacts:/ location to its destination and
// returns any other location unchanged.
func (f Fetcher) Resolve(location string) (string, error) {
	rest, ok := strings.CutPrefix(location, "mlflow-artifacts:")
	if !ok {
		return location, nil
	}
	if f.ArtifactsDestination == "" {
		return "", forecast.FieldErrorf(forecast.EINVALID, "source", "%s needs the MLflow server's artifacts destination (--artifacts-destination)", location)
	}
	if u, err := url.Parse(location); err == nil && u.Host != "" {
		rest = u.Path // mlflow-artifacts://host:port/path
	}
	rest = strings.TrimLeft(rest, "/")
	if hasDotDot(rest) {
		return "", forecast.FieldErrorf(forecast.EINVALID, "source", "artifact path %q escapes the artifact root", location)
	}
	return strings.TrimRight(f.ArtifactsDestination, "/") + "/" + rest, nil
}

// Fetch copies the directory at location into dst (replacing dst).
// ENOTFOUND when nothing is there, EINVALID for an unsupported scheme or a
// path with "..".
func (f Fetcher) Fetch(ctx context.Context, location, dst string) error {
	loc, err := f.Resolve(location)
	if err != nil {
		return err
	}
	switch {
	case s3.IsURI(loc):
		if f.S3 == nil {
			return forecast.FieldErrorf(forecast.EINVALID, "source", "%s: no S3 store configured", loc)
		}
		_, err := s3.Fetch(ctx, f.S3, loc, dst)
		return err
	case strings.HasPrefix(loc, "file://"):
		u, err := url.Parse(loc)
		if err != nil {
			return forecast.FieldErrorf(forecast.EINVALID, "source", "%q is not a file URI", loc)
		}
		return copyDir(u.Path, dst)
	case strings.Contains(loc, "://") || strings.HasPrefix(loc, "models:") || strings.HasPrefix(loc, "runs:"):
		return forecast.FieldErrorf(forecast.EINVALID, "source", "artifact location %q: only local paths, file://, s3:// and mlflow-artifacts:/ are supported", loc)
	}
	if hasDotDot(loc) {
		return forecast.FieldErrorf(forecast.EINVALID, "source", "artifact path %q contains '..'", loc)
	}
	return copyDir(loc, dst)
}

func hasDotDot(p string) bool {
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return true
		}
	}
	return false
}

// copyDir copies the regular files under src into a temporary sibling of
// dst, then renames it over dst.
func copyDir(src, dst string) error {
	st, err := os.Stat(src)
	if err != nil || !st.IsDir() {
		return &forecast.Error{Code: forecast.ENOTFOUND, Field: "source", Message: "no artifact directory at " + src, Err: err}
	}
	dst = filepath.Clean(dst)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".copy-")
	if err != nil {
		return err
	}
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(filepath.Join(tmp, rel), 0o755)
		case d.Type().IsRegular():
			return copyFile(p, filepath.Join(tmp, rel))
		}
		return nil // symlinks and devices are not artifacts
	})
	if err == nil {
		os.RemoveAll(dst)
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.RemoveAll(tmp)
	}
	return err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
