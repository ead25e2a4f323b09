// Package s3 fetches model artifacts from S3-compatible object stores
// (SeaweedFS, MinIO, AWS S3) with minio-go: Fetch downloads every object
// under s3://bucket/prefix into a local directory, atomically, the way
// KServe's storage initializer fills /mnt/models; Stat fingerprints the
// same listing so a poller can tell whether anything changed.
//
// Errors are *forecast.Error values: EINVALID for a malformed URI or an
// object key that would escape the destination directory, ENOTFOUND for a
// missing bucket or an empty prefix, EUNAUTHORIZED for rejected
// credentials, EUNAVAILABLE for an unreachable store; context errors stay
// in the chain.
package s3

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/carbongate/carbongate/forecast"
)

// API is the part of *minio.Client that this package uses.
type API interface {
	ListObjects(ctx context.Context, bucket string, opts minio.ListObjectsOptions) <-chan minio.ObjectInfo
	GetObject(ctx context.Context, bucket, key string, opts minio.GetObjectOptions) (*minio.Object, error)
}

var _ API = (*minio.Client)(nil)

// DefaultTimeout bounds Fetch and Stat when ctx has no deadline.
const DefaultTimeout = 5 * time.Minute

// Location is a parsed s3://bucket/prefix URI. Prefix is "" (the whole
// bucket) or ends in "/".
type Location struct {
	Bucket string
	Prefix string
}

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// IsURI reports whether s is an s3:// URI.
func IsURI(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseURI parses s3://bucket[/prefix]. The prefix is taken as a
// directory: s3://b/models/DE holds the objects under models/DE/.
// EINVALID for anything else.
func ParseURI(s string) (Location, error) {
	if !IsURI(s) {
		return Location{}, forecast.Errorf(forecast.EINVALID, "%q is not an s3://bucket/prefix URI", s)
	}
	rest := strings.TrimPrefix(s, "s3://")
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, forecast.Errorf(forecast.EINVALID, "%q has no bucket", s)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return Location{}, forecast.Errorf(forecast.EINVALID, "%q: prefix segment %q is not allowed", s, seg)
			}
		}
		prefix += "/"
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// Object is one object of a listing, with its path relative to the prefix
// (slash-separated, checked to stay inside the destination).
type Object struct {
	Key  string
	Rel  string
	Size int64
	ETag string
}

// List returns the objects under loc sorted by key, skipping directory
// markers (keys ending in "/"). EINVALID when a key would escape the
// destination directory (an absolute path, a ".." segment); ENOTFOUND when
// there is none.
func List(ctx context.Context, api API, loc Location) ([]Object, error) {
	ctx, cancel := context.WithCancel(ctx) // stops the lister on an early return
	defer cancel()
	var out []Object
	for info := range api.ListObjects(ctx, loc.Bucket, minio.ListObjectsOptions{Prefix: loc.Prefix, Recursive: true}) {
		if info.Err != nil {
			return nil, classify(ctx, fmt.Sprintf("list %s", loc), info.Err)
		}
		if strings.HasSuffix(info.Key, "/") {
			continue
		}
		rel, err := relPath(loc, info.Key)
		if err != nil {
			return nil, err
		}
		out = append(out, Object{Key: info.Key, Rel: rel, Size: info.Size, ETag: info.ETag})
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, forecast.Errorf(forecast.ENOTFOUND, "no objects under %s", loc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// relPath returns key relative to loc's prefix, rejecting keys that would
// land outside the destination directory once joined to it.
func relPath(loc Location, key string) (string, error) {
	rel, ok := strings.CutPrefix(key, loc.Prefix)
	if !ok || rel == "" {
		return "", forecast.Errorf(forecast.EINVALID, "object key %q is not under %s", key, loc)
	}
	bad := strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") || strings.ContainsRune(rel, 0)
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			bad = true
		}
	}
	if bad || !filepath.IsLocal(filepath.FromSlash(rel)) || path.Clean(rel) != rel {
		return "", forecast.Errorf(forecast.EINVALID, "object key %q would escape the destination directory", key)
	}
	return rel, nil
}

// Stat returns a fingerprint of the listing under uri (keys, sizes and
// ETags): equal fingerprints mean Fetch would write the same files.
func Stat(ctx context.Context, api API, uri string) (string, error) {
	loc, err := ParseURI(uri)
	if err != nil {
		return "", err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	objs, err := List(ctx, api, loc)
	if err != nil {
		return "", err
	}
	return fingerprint(objs), nil
}

func fingerprint(objs []Object) string {
	h := sha256.New()
	for _, o := range objs {
		fmt.Fprintf(h, "%s\x00%d\x00%s\n", o.Rel, o.Size, o.ETag)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Result says what Fetch wrote.
type Result struct {
	Objects     int
	Bytes       int64
	Fingerprint string // as Stat returns it
}

// Fetch downloads every object under uri (s3://bucket/prefix) into dst, so
// that the object prefix/a/b lands at dst/a/b. The files are written into
// a fresh temporary sibling of dst, which then replaces dst in one rename:
// a reader sees the old directory or the new one, never a mix, and a failed
// or cancelled Fetch leaves dst as it was. Every key is checked before
// anything is downloaded. ctx bounds the whole download; without a
// deadline DefaultTimeout applies.
func Fetch(ctx context.Context, api API, uri, dst string) (Result, error) {
	return FetchLimited(ctx, api, uri, dst, Limits{})
}

// Limits cap what FetchLimited downloads; 0 is no limit.
type Limits struct {
	MaxBytes   int64 // the objects' total size
	MaxObjects int
}

// check: EINVALID when the listing objs passes lim.
func (lim Limits) check(loc Location, objs []Object) error {
	var total int64
	for _, o := range objs {
		total += o.Size
	}
	if (lim.MaxObjects > 0 && len(objs) > lim.MaxObjects) || (lim.MaxBytes > 0 && total > lim.MaxBytes) {
		return forecast.Errorf(forecast.EINVALID, "%s holds %d objects of %d bytes, over the limits of %d objects and %d bytes", loc, len(objs), total, lim.MaxObjects, lim.MaxBytes)
	}
	return nil
}

// FetchLimited is Fetch refusing (EINVALID, before downloading anything)
// a listing over lim.
func FetchLimited(ctx context.Context, api API, uri, dst string, lim Limits) (Result, error) {
	loc, err := ParseURI(uri)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	objs, err := List(ctx, api, loc)
	if err != nil {
		return Result{}, err
	}
	if err := lim.check(loc, objs); err != nil {
		return Result{}, err
	}
	dst = filepath.Clean(dst)
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Result{}, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".fetch-")
	if err != nil {
		return Result{}, err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Result{}, err
	}
	res := Result{Objects: len(objs), Fingerprint: fingerprint(objs)}
	for _, o := range objs {
		n, err := download(ctx, api, loc.Bucket, o, filepath.Join(tmp, filepath.FromSlash(o.Rel)))
		if err != nil {
			return Result{}, err
		}
		res.Bytes += n
	}
	if err := replaceDir(tmp, dst); err != nil {
		return Result{}, err
	}
	done = true
	return res, nil
}

func download(ctx context.Context, api API, bucket string, o Object, file string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return 0, err
	}
	obj, err := api.GetObject(ctx, bucket, o.Key, minio.GetObjectOptions{})
	if err != nil {
		return 0, classify(ctx, "get "+o.Key, err)
	}
	defer obj.Close()
	f, err := os.OpenFile(file, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, io.LimitReader(obj, o.Size+1)) // never more than listed
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, classify(ctx, "get "+o.Key, err)
	}
	if n != o.Size {
		return 0, forecast.Errorf(forecast.EUNAVAILABLE, "object %s: got %d bytes, listed %d (changed during download?)", o.Key, n, o.Size)
	}
	return n, nil
}

// replaceDir renames tmp to dst, replacing a previous dst.
func replaceDir(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err == nil {
		return nil
	}
	old := tmp + ".old"
	if err := os.Rename(dst, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Rename(old, dst)
		return err
	}
	return os.RemoveAll(old)
}

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// classify maps a minio-go error to the domain vocabulary, keeping it as
// the cause.
func classify(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ctx.Err())) {
		return fmt.Errorf("s3 %s: %w", what, ctx.Err())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3 %s: %w", what, err)
	}
	code := forecast.EUNAVAILABLE
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "NoSuchBucket", "NoSuchKey":
		code = forecast.ENOTFOUND
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
		code = forecast.EUNAUTHORIZED
	case "InvalidBucketName", "InvalidObjectName":
		code = forecast.EINVALID
	}
	msg := "s3 " + what
	if resp.Code != "" {
		msg += ": " + resp.Code
	} else {
		msg += " failed"
	}
	return &forecast.Error{Code: code, Message: msg, Err: err}
}

// Config says how to reach the store. See ConfigFromEnv for the
// environment it reads.
//
// Credentials: static keys (AccessKey, SecretKey and, for temporary keys,
// SessionToken) when set; else the standard chain, first that yields keys:
// the shared credentials file (SharedCredentialsFile, else
// ~/.aws/credentials; profile Profile, else "default"), then a role: web
// identity (WebIdentityTokenFile with RoleARN: EKS IRSA, through STS
// AssumeRoleWithWebIdentity at STSEndpoint or the regional endpoint), the
// ECS or EKS Pod Identity container endpoint (AWS_CONTAINER_CREDENTIALS_*,
// read by minio-go), or, for an AWS endpoint only, the EC2 instance role
// (IMDS; not with NoInstanceRole); else anonymous access. Role credentials
// are refreshed before they expire.
type Config struct {
	// Endpoint is host[:port], or a URL whose scheme (http or https) sets
	// Secure. Default s3.amazonaws.com.
	Endpoint     string
	AccessKey    string // "" with SecretKey "": the chain
	SecretKey    string
	SessionToken string // with the static keys
	Region       string
	Secure       bool // TLS
	// InsecureSkipVerify disables certificate verification (KServe's
	// S3_VERIFY_SSL=0), for self-signed stores.
	InsecureSkipVerify bool

	SharedCredentialsFile string
	Profile               string
	WebIdentityTokenFile  string
	RoleARN               string
	RoleSessionName       string
	STSEndpoint           string
	// NoInstanceRole skips the EC2 instance metadata service
	// (AWS_EC2_METADATA_DISABLED=true).
	NoInstanceRole bool
}

// ConfigFromEnv reads the variables KServe's S3 credential builder sets on
// the storage initializer (and carbonserve's container): AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL (a URL; its scheme sets TLS) or
// S3_ENDPOINT (host:port) with S3_USE_HTTPS ("0" = plain HTTP; default
// TLS), S3_VERIFY_SSL ("0" = skip verification), AWS_REGION or
// AWS_DEFAULT_REGION; and those of the AWS credential chain:
// AWS_SESSION_TOKEN, AWS_SHARED_CREDENTIALS_FILE, AWS_PROFILE,
// AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN and AWS_ROLE_SESSION_NAME (what
// EKS injects for IRSA), AWS_ENDPOINT_URL_STS, AWS_EC2_METADATA_DISABLED.
// getenv is os.Getenv in production.
func ConfigFromEnv(getenv func(string) string) Config {
	c := Config{
		AccessKey:    getenv("AWS_ACCESS_KEY_ID"),
		SecretKey:    getenv("AWS_SECRET_ACCESS_KEY"),
		SessionToken: getenv("AWS_SESSION_TOKEN"),
		Region:       firstNonEmpty(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION")),
		Secure:       getenv("S3_USE_HTTPS") != "0",
		Endpoint:     firstNonEmpty(getenv("AWS_ENDPOINT_URL"), getenv("S3_ENDPOINT")),

		SharedCredentialsFile: getenv("AWS_SHARED_CREDENTIALS_FILE"),
		Profile:               getenv("AWS_PROFILE"),
		WebIdentityTokenFile:  getenv("AWS_WEB_IDENTITY_TOKEN_FILE"),
		RoleARN:               getenv("AWS_ROLE_ARN"),
		RoleSessionName:       getenv("AWS_ROLE_SESSION_NAME"),
		STSEndpoint:           getenv("AWS_ENDPOINT_URL_STS"),
		NoInstanceRole:        strings.EqualFold(getenv("AWS_EC2_METADATA_DISABLED"), "true"),
	}
	c.InsecureSkipVerify = getenv("S3_VERIFY_SSL") == "0"
	return c
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// hostAndTLS resolves Endpoint to minio's host[:port] and TLS setting.
func (c Config) hostAndTLS() (string, bool, error) {
	ep := c.Endpoint
	if ep == "" {
		return "s3.amazonaws.com", true, nil
	}
	if !strings.Contains(ep, "://") {
		return strings.TrimSuffix(ep, "/"), c.Secure, nil
	}
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
		return "", false, forecast.Errorf(forecast.EINVALID, "S3 endpoint %q is not host[:port] or an http(s)://host[:port] URL", ep)
	}
	return u.Host, u.Scheme == "https", nil
}
