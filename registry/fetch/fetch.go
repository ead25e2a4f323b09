// Package fetch copies a model version's artifacts to a local directory,
// whatever its location: a local path or file:// URI, s3://bucket/prefix
// (registry/s3), crate+blob://host:port/table/sha1 (a directory in a
// CrateDB blob table, registry/crateblob), or mlflow-artifacts:/path,
// which MLflow resolves against the server's --artifacts-destination. The destination is replaced in one
// rename, so readers see the old directory or the new one; a failed fetch
// leaves nothing behind.
//
// A version's source is written by whoever holds the registry's write
// token, so a Fetcher copies only from the locations it is configured to
// trust (the artifacts destination and Sources), at most MaxBytes in
// MaxFiles files, and never widens a file's mode.
package fetch

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/registry/crateblob"
	"github.com/carbongate/carbongate/registry/s3"
)

// Defaults of Fetcher.MaxBytes and MaxFiles: far above a forecaster's
// artifacts (a few files, a few MB), far below what fills a disk.
const (
	DefaultMaxBytes = 256 << 20
	DefaultMaxFiles = 10_000
)

// Fetcher fetches artifact directories. The zero value fetches nothing:
// every location must lie under ArtifactsDestination or one of Sources.
type Fetcher struct {
	// S3 is the client for s3:// locations; nil: they are refused.
	S3 s3.API
	// CrateBlob is the client for crate+blob:// and crate+blobs://
	// locations; nil: one of Fetch's own, with crateblob's defaults.
	CrateBlob *crateblob.Client
	// ArtifactsDestination is what mlflow-artifacts:/X maps to
	// (ArtifactsDestination/X), as the MLflow server's
	// --artifacts-destination; "": such locations are refused. Locations
	// under it may be fetched.
	ArtifactsDestination string
	// Sources are the other locations that may be fetched, each with
	// everything under it (whole path segments: s3://b/models allows
	// s3://b/models/x, not s3://b/models-old): s3://bucket[/prefix],
	// crate+blob://host:port/table (the table's directories), or a local
	// directory as an absolute path or file:// URI. A local path is
	// fetched only when it lies under a local entry here or under a local
	// ArtifactsDestination, after symbolic links are resolved.
	Sources []string
	// MaxBytes and MaxFiles cap one version's artifacts; 0 means
	// DefaultMaxBytes, DefaultMaxFiles.
	MaxBytes int64
	MaxFiles int
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
// ENOTFOUND when nothing is there; EINVALID for an unsupported scheme, a
// path with "..", a location outside the allowed ones, or artifacts over
// the limits.
func (f Fetcher) Fetch(ctx context.Context, location, dst string) error {
	loc, err := f.Resolve(location)
	if err != nil {
		return err
	}
	lim := f.limits()
	switch {
	case s3.IsURI(loc):
		if err := f.allowS3(loc); err != nil {
			return err
		}
		if f.S3 == nil {
			return forecast.FieldErrorf(forecast.EINVALID, "source", "%s: no S3 store configured", loc)
		}
		_, err := s3.FetchLimited(ctx, f.S3, loc, dst, lim)
		return err
	case crateblob.IsURI(loc):
		return f.fetchCrateBlob(ctx, loc, dst, lim)
	case strings.HasPrefix(loc, "file://"):
		u, err := url.Parse(loc)
		if err != nil {
			return forecast.FieldErrorf(forecast.EINVALID, "source", "%q is not a file URI", loc)
		}
		loc = u.Path
	case strings.Contains(loc, "://") || strings.HasPrefix(loc, "models:") || strings.HasPrefix(loc, "runs:"):
		return forecast.FieldErrorf(forecast.EINVALID, "source", "artifact location %q: only local paths, file://, s3://, crate+blob:// and mlflow-artifacts:/ are supported", loc)
	}
	if hasDotDot(loc) {
		return forecast.FieldErrorf(forecast.EINVALID, "source", "artifact path %q contains '..'", loc)
	}
	src, err := f.allowLocal(loc)
	if err != nil {
		return err
	}
	return copyDir(ctx, src, dst, lim)
}

func (f Fetcher) limits() s3.Limits {
	lim := s3.Limits{MaxBytes: f.MaxBytes, MaxObjects: f.MaxFiles}
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = DefaultMaxBytes
	}
	if lim.MaxObjects <= 0 {
		lim.MaxObjects = DefaultMaxFiles
	}
	return lim
}

// allowed lists the trusted locations: the artifacts destination, then
// Sources.
func (f Fetcher) allowed() []string {
	out := make([]string, 0, len(f.Sources)+1)
	if f.ArtifactsDestination != "" {
		out = append(out, f.ArtifactsDestination)
	}
	for _, s := range f.Sources {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func notAllowed(loc string) error {
	return forecast.FieldErrorf(forecast.EINVALID, "source", "artifact location %s is outside the allowed artifact sources", loc)
}

// allowS3 accepts loc when it lies under an s3:// entry of allowed.
func (f Fetcher) allowS3(loc string) error {
	l, err := s3.ParseURI(loc)
	if err != nil {
		return &forecast.Error{Code: forecast.EINVALID, Field: "source", Message: forecast.ErrorMessage(err), Err: err}
	}
	for _, a := range f.allowed() {
		if p, err := s3.ParseURI(a); err == nil && p.Bucket == l.Bucket && strings.HasPrefix(l.Prefix, p.Prefix) {
			return nil
		}
	}
	return notAllowed(loc)
}

// fetchCrateBlob downloads the directory the manifest blob loc names
// into dst, when loc lies in a crate+blob table of allowed.
func (f Fetcher) fetchCrateBlob(ctx context.Context, loc, dst string, lim s3.Limits) error {
	l, err := crateblob.ParseURI(loc)
	if err != nil {
		return &forecast.Error{Code: forecast.EINVALID, Field: "source", Message: forecast.ErrorMessage(err), Err: err}
	}
	if l.Digest == "" {
		return forecast.FieldErrorf(forecast.EINVALID, "source", "%s names a blob table, not a directory's manifest blob", loc)
	}
	allowed := false
	for _, a := range f.allowed() {
		if p, err := crateblob.ParseURI(a); err == nil && l.Under(p) {
			allowed = true
		}
	}
	if !allowed {
		return notAllowed(loc)
	}
	c := f.CrateBlob
	if c == nil {
		c = crateblob.New(crateblob.Config{})
		defer c.Close()
	}
	return intoTemp(dst, func(tmp string) error {
		_, err := c.Download(ctx, l, tmp, lim.MaxBytes, lim.MaxObjects)
		return err
	})
}

// allowLocal resolves the local directory loc (symbolic links followed)
// and returns it when it lies under a local entry of allowed.
func (f Fetcher) allowLocal(loc string) (string, error) {
	src, err := realPath(loc)
	if err != nil {
		return "", &forecast.Error{Code: forecast.ENOTFOUND, Field: "source", Message: "no artifact directory at " + loc, Err: err}
	}
	for _, a := range f.allowed() {
		if s3.IsURI(a) {
			continue
		}
		if u, err := url.Parse(a); err == nil && u.Scheme == "file" {
			a = u.Path
		} else if strings.Contains(a, "://") {
			continue
		}
		root, err := realPath(a)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(root, src); err == nil && filepath.IsLocal(rel) {
			return src, nil
		}
	}
	return "", notAllowed(loc)
}

// realPath is p made absolute with every symbolic link resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
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
// dst, then renames it over dst. Files and directories keep their mode
// without group or other write and without execute bits on files; the
// copy stops, and is removed, when it would pass lim.
func copyDir(ctx context.Context, src, dst string, lim s3.Limits) error {
	st, err := os.Stat(src)
	if err != nil || !st.IsDir() {
		return &forecast.Error{Code: forecast.ENOTFOUND, Field: "source", Message: "no artifact directory at " + src, Err: err}
	}
	return intoTemp(dst, func(tmp string) error {
		c := copier{ctx: ctx, src: src, tmp: tmp, lim: lim}
		if err := os.Chmod(tmp, dirMode(st.Mode())); err != nil {
			return err
		}
		return filepath.WalkDir(src, c.visit)
	})
}

// intoTemp runs fill on a fresh temporary sibling of dst, then renames it
// over dst; when fill fails the temporary directory is removed and dst is
// left as it was.
func intoTemp(dst string, fill func(tmp string) error) error {
	dst = filepath.Clean(dst)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".copy-")
	if err != nil {
		return err
	}
	err = os.Chmod(tmp, 0o755)
	if err == nil {
		err = fill(tmp)
	}
	if err == nil {
		os.RemoveAll(dst)
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.RemoveAll(tmp)
	}
	return err
}

// copier is one copyDir's walk.
type copier struct {
	ctx    context.Context
	src    string
	tmp    string
	lim    s3.Limits
	files  int
	copied int64
}

func (c *copier) visit(p string, d fs.DirEntry, err error) error {
	if err != nil {
		return err
	}
	if err := c.ctx.Err(); err != nil {
		return err
	}
	rel, err := filepath.Rel(c.src, p)
	if err != nil || rel == "." {
		return err
	}
	if !d.IsDir() && !d.Type().IsRegular() {
		return nil // symlinks and devices are not artifacts
	}
	info, err := d.Info()
	if err != nil {
		return err
	}
	if d.IsDir() {
		return os.Mkdir(filepath.Join(c.tmp, rel), dirMode(info.Mode()))
	}
	c.files++
	if c.files > c.lim.MaxObjects || c.copied+info.Size() > c.lim.MaxBytes {
		return c.tooLarge()
	}
	n, err := copyFile(p, filepath.Join(c.tmp, rel), info.Mode(), c.lim.MaxBytes-c.copied)
	c.copied += n
	return err
}

func (c *copier) tooLarge() error {
	return forecast.FieldErrorf(forecast.EINVALID, "source", "the artifacts at %s exceed the limits of %d files and %d bytes", c.src, c.lim.MaxObjects, c.lim.MaxBytes)
}

// dirMode is a copied directory's mode: the source's, less group and
// other write, always accessible to its owner.
func dirMode(m fs.FileMode) fs.FileMode { return m.Perm()&0o755 | 0o700 }

// fileMode is a copied file's mode: the source's, less execute bits and
// group and other write.
func fileMode(m fs.FileMode) fs.FileMode { return m.Perm() & 0o644 }

// copyFile copies src to a new file dst of src's mode (fileMode), at most
// budget bytes (EINVALID beyond: the file grew while it was copied), and
// returns the bytes written.
func copyFile(src, dst string, mode fs.FileMode, budget int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fileMode(mode))
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, io.LimitReader(in, budget+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > budget {
		err = forecast.FieldErrorf(forecast.EINVALID, "source", "the artifacts at %s exceed the size limit", filepath.Dir(src))
	}
	return n, err
}

// Flags declares --artifact-sources (added to Sources) and
// --artifact-max-bytes (MaxBytes) on fs, the same in every binary that
// fetches versions.
func (f *Fetcher) Flags(fs *flag.FlagSet) {
	fs.Var(sourcesValue{f}, "artifact-sources", "locations, besides --artifacts-destination, that model versions may be fetched from, comma-separated (the flag may repeat): s3://bucket/prefix, crate+blob://host:port/table, or a local directory (path or file://); default: none")
	if f.MaxBytes == 0 {
		f.MaxBytes = DefaultMaxBytes
	}
	fs.Int64Var(&f.MaxBytes, "artifact-max-bytes", f.MaxBytes, fmt.Sprintf("largest model version fetched, in bytes (at most %d files)", DefaultMaxFiles))
}

// sourcesValue is the flag.Value of --artifact-sources: Set adds to
// Sources, String gives them back comma-separated (to pass them on).
type sourcesValue struct{ f *Fetcher }

func (v sourcesValue) String() string {
	if v.f == nil {
		return ""
	}
	return strings.Join(v.f.Sources, ",")
}

func (v sourcesValue) Set(s string) error {
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			v.f.Sources = append(v.f.Sources, e)
		}
	}
	return nil
}
