package crateblob

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/carbongate/carbongate/forecast"
)

// ManifestFormat is the format field of a directory's manifest blob.
const ManifestFormat = "carbongate.blobdir/1"

// MaxManifestBytes caps a manifest blob (about 20,000 files' entries).
const MaxManifestBytes = 4 << 20

// Manifest is the blob that names a directory: its files, sorted by path.
type Manifest struct {
	Format string         `json:"format"`
	Files  []ManifestFile `json:"files"`
}

// ManifestFile is one file of a Manifest: its slash-separated path under
// the directory, the SHA-1 of its bytes (its blob) and its size.
type ManifestFile struct {
	Path string `json:"path"`
	SHA1 string `json:"sha1"`
	Size int64  `json:"size"`
}

// total is the files' summed size.
func (m Manifest) total() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Uploaded is what Upload stored.
type Uploaded struct {
	// Location names the manifest: the directory's location.
	Location Location
	Files    int
	Bytes    int64
	// Created lists the blobs this upload created (manifest included);
	// the others were in the table already, maybe for another version.
	Created []string
}

// Upload stores every regular file under dir (symbolic links are not
// artifacts) in the blob table, then the manifest naming them, and
// returns the manifest's location. EINVALID (nothing stored) when the
// files total more than maxBytes (0: no limit), naming the size. On
// error the blobs it created are removed (best effort, with a fresh
// deadline) so no half directory is left behind.
func (c *Client) Upload(ctx context.Context, dir string, table Location, maxBytes int64) (Uploaded, error) {
	table = table.TableLocation()
	m, files, err := scan(dir)
	if err != nil {
		return Uploaded{}, err
	}
	if maxBytes > 0 && m.total() > maxBytes {
		return Uploaded{}, forecast.Errorf(forecast.EINVALID, "%s holds %d bytes in %d files, over the artifact size limit of %d bytes", dir, m.total(), len(m.Files), maxBytes)
	}
	up := Uploaded{Files: len(m.Files), Bytes: m.total()}
	fail := func(err error) (Uploaded, error) {
		c.Remove(table, up.Created)
		return Uploaded{}, err
	}
	for i, f := range m.Files {
		created, err := c.putFile(ctx, table, files[i], f)
		if err != nil {
			return fail(err)
		}
		if created {
			up.Created = append(up.Created, f.SHA1)
		}
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fail(err)
	}
	digest := Digest(body)
	created, err := c.Put(ctx, table, digest, bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fail(err)
	}
	if created {
		up.Created = append(up.Created, digest)
	}
	up.Location = table.Blob(digest)
	return up, nil
}

// Digest is the SHA-1 of b as CrateDB names blobs.
func Digest(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// scan lists dir's regular files as a manifest (with their SHA-1s) and
// their local paths, in the same order.
func scan(dir string) (Manifest, []string, error) {
	m := Manifest{Format: ManifestFormat}
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		sum, size, err := hashFile(p)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, ManifestFile{Path: filepath.ToSlash(rel), SHA1: sum, Size: size})
		files = append(files, p)
		return nil
	})
	if err != nil {
		return Manifest{}, nil, forecast.Errorf(forecast.EINVALID, "%v", err)
	}
	if len(m.Files) == 0 {
		return Manifest{}, nil, forecast.Errorf(forecast.EINVALID, "no files under %s", dir)
	}
	return m, files, nil // WalkDir visits in lexical order: sorted by path
}

func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha1.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

// putFile uploads the local file p as mf's blob. CrateDB refuses it
// (EINVALID) when the file changed since it was hashed.
func (c *Client) putFile(ctx context.Context, table Location, p string, mf ManifestFile) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return c.Put(ctx, table, mf.SHA1, io.LimitReader(f, mf.Size), mf.Size)
}

// Remove deletes the blobs digests from table, best effort, under a
// deadline of its own (it runs after a failure, when the caller's may be
// spent); it returns the errors joined.
func (c *Client) Remove(table Location, digests []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, d := range digests {
		if err := c.Delete(ctx, table.Blob(d)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ReadManifest fetches and checks the manifest l names: its digest, its
// format, every path (relative, no "..", no duplicates) and digest.
func (c *Client) ReadManifest(ctx context.Context, l Location) (Manifest, error) {
	var buf bytes.Buffer
	if _, err := c.Get(ctx, l, &buf, MaxManifestBytes); err != nil {
		return Manifest{}, err
	}
	var m Manifest
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || m.Format != ManifestFormat {
		return Manifest{}, forecast.Errorf(forecast.EINVALID, "%s is not a %s manifest", l, ManifestFormat)
	}
	seen := make(map[string]bool, len(m.Files))
	for _, f := range m.Files {
		if !localPath(f.Path) || seen[f.Path] || !ValidDigest(f.SHA1) || f.Size < 0 {
			return Manifest{}, forecast.Errorf(forecast.EINVALID, "%s: manifest entry %q is not a file path under the directory with a SHA-1 and a size", l, f.Path)
		}
		seen[f.Path] = true
	}
	if len(m.Files) == 0 {
		return Manifest{}, forecast.Errorf(forecast.EINVALID, "%s: the manifest lists no files", l)
	}
	sort.Slice(m.Files, func(i, j int) bool { return m.Files[i].Path < m.Files[j].Path })
	return m, nil
}

// localPath accepts a slash-separated relative path that stays under the
// directory it is joined to.
func localPath(p string) bool {
	return p != "" && path.Clean(p) == p && !strings.ContainsAny(p, "\\\x00") && filepath.IsLocal(filepath.FromSlash(p))
}

// Download writes the directory l names (a manifest) into dir, an empty
// directory: every file is checked against the manifest's SHA-1 and size
// as it is written. EINVALID, before anything is written, when the
// manifest lists more than maxFiles files or maxBytes bytes (0: no
// limit), naming both; ENOTFOUND when the manifest or a file's blob is
// missing. On error dir holds a partial copy: the caller removes it.
func (c *Client) Download(ctx context.Context, l Location, dir string, maxBytes int64, maxFiles int) (Manifest, error) {
	m, err := c.ReadManifest(ctx, l)
	if err != nil {
		return Manifest{}, err
	}
	if (maxFiles > 0 && len(m.Files) > maxFiles) || (maxBytes > 0 && m.total() > maxBytes) {
		return Manifest{}, forecast.Errorf(forecast.EINVALID, "%s holds %d bytes in %d files, over the limits of %d bytes and %d files", l, m.total(), len(m.Files), maxBytes, maxFiles)
	}
	for _, f := range m.Files {
		if err := c.getFile(ctx, l.Blob(f.SHA1), filepath.Join(dir, filepath.FromSlash(f.Path)), f.Size); err != nil {
			return Manifest{}, err
		}
	}
	return m, nil
}

func (c *Client) getFile(ctx context.Context, l Location, file string, size int64) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	n, err := c.Get(ctx, l, f, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = forecast.Errorf(forecast.EINVALID, "%s: got %d bytes, the manifest lists %d", l, n, size)
	}
	return err
}
