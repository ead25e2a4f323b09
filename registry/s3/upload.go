package s3

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
)

// Writer is the part of *minio.Client that Upload uses.
type Writer interface {
	FPutObject(ctx context.Context, bucket, key, file string, opts minio.PutObjectOptions) (minio.UploadInfo, error)
	RemoveObject(ctx context.Context, bucket, key string, opts minio.RemoveObjectOptions) error
}

var _ Writer = (*minio.Client)(nil)

// Upload copies every regular file under dir to uri (s3://bucket/prefix),
// so that dir/a/b lands at prefix/a/b, and returns the keys written. On
// error the objects already written are removed (best effort, with a fresh
// deadline) so no partial directory is left for a registry to point at.
func Upload(ctx context.Context, w Writer, dir, uri string) ([]string, error) {
	loc, err := ParseURI(uri)
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "model-dir", "%v", err)
	}
	if len(files) == 0 {
		return nil, forecast.FieldErrorf(forecast.EINVALID, "model-dir", "no files under %s", dir)
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var keys []string
	for _, f := range files {
		rel, err := filepath.Rel(dir, f)
		if err != nil {
			return nil, err
		}
		key := loc.Prefix + filepath.ToSlash(rel)
		if _, err := w.FPutObject(ctx, loc.Bucket, key, f, minio.PutObjectOptions{}); err != nil {
			removeAll(w, loc.Bucket, keys)
			return nil, classify(ctx, "put "+key, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// Remove deletes keys from bucket (best effort cleanup after a failed
// registration); it returns the first error.
func Remove(ctx context.Context, w Writer, uri string, keys []string) error {
	loc, err := ParseURI(uri)
	if err != nil {
		return err
	}
	var errs []error
	for _, k := range keys {
		if !strings.HasPrefix(k, loc.Prefix) {
			continue
		}
		if err := w.RemoveObject(ctx, loc.Bucket, k, minio.RemoveObjectOptions{}); err != nil {
			errs = append(errs, classify(ctx, "remove "+k, err))
		}
	}
	return errors.Join(errs...)
}

func removeAll(w Writer, bucket string, keys []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, k := range keys {
		_ = w.RemoveObject(ctx, bucket, k, minio.RemoveObjectOptions{})
	}
}
