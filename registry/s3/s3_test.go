package s3

import (
	"testing"

	"github.com/carbongate/carbongate/forecast"
)

func TestParseURI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Location
		code string
	}{
		{in: "s3://models", want: Location{Bucket: "models"}},
		{in: "s3://models/", want: Location{Bucket: "models"}},
		{in: "s3://models/lifecycle/DE", want: Location{Bucket: "models", Prefix: "lifecycle/DE/"}},
		{in: "s3://models/lifecycle/DE/", want: Location{Bucket: "models", Prefix: "lifecycle/DE/"}},
		{in: "s3:///x", code: forecast.EINVALID},
		{in: "s3://b/a/../c", code: forecast.EINVALID},
		{in: "s3://b/a//c", code: forecast.EINVALID},
		{in: "gs://b/x", code: forecast.EINVALID},
		{in: "/mnt/models", code: forecast.EINVALID},
	} {
		got, err := ParseURI(tc.in)
		if forecast.ErrorCode(err) != tc.code || got != tc.want {
			t.Errorf("ParseURI(%q)=%+v, %v; want %+v, code %q", tc.in, got, err, tc.want, tc.code)
		}
	}
}

// TestRelPathRejectsTraversal pins which keys may be written under the
// destination directory.
func TestRelPathRejectsTraversal(t *testing.T) {
	t.Parallel()
	loc := Location{Bucket: "b", Prefix: "m/"}
	for _, tc := range []struct {
		key  string
		want string // "" = rejected
	}{
		{"m/MLmodel", "MLmodel"},
		{"m/sub/weights.bin", "sub/weights.bin"},
		{"m/..", ""},
		{"m/../x", ""},
		{"m/a/../../x", ""},
		{"m//etc/passwd", ""},
		{"m/./x", ""},
		{"m/a\\..\\..\\x", ""},
		{"m/a//b", ""},
		{"other/x", ""},
		{"m/", ""},
	} {
		got, err := relPath(loc, tc.key)
		if tc.want == "" {
			if err == nil || forecast.ErrorCode(err) != forecast.EINVALID {
				t.Errorf("relPath(%q)=%q, %v; want EINVALID", tc.key, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("relPath(%q)=%q, %v; want %q", tc.key, got, err, tc.want)
		}
	}
	// With the whole bucket as prefix, a leading slash is an absolute path.
	if _, err := relPath(Location{Bucket: "b"}, "/etc/passwd"); err == nil {
		t.Error("absolute key accepted")
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	for _, tc := range []struct {
		note   string
		env    func(string) string
		host   string
		secure bool
		code   string
	}{
		{note: "nothing: AWS", env: env(), host: "s3.amazonaws.com", secure: true},
		{note: "KServe S3_ENDPOINT, https default", env: env("S3_ENDPOINT", "seaweed:8333"), host: "seaweed:8333", secure: true},
		{note: "KServe S3_USE_HTTPS=0", env: env("S3_ENDPOINT", "seaweed:8333", "S3_USE_HTTPS", "0"), host: "seaweed:8333"},
		{note: "AWS_ENDPOINT_URL http", env: env("AWS_ENDPOINT_URL", "http://127.0.0.1:8333"), host: "127.0.0.1:8333"},
		{note: "AWS_ENDPOINT_URL wins", env: env("AWS_ENDPOINT_URL", "https://s3.example:443", "S3_ENDPOINT", "x:1"), host: "s3.example:443", secure: true},
		{note: "URL with a path", env: env("AWS_ENDPOINT_URL", "http://h:1/bucket"), code: forecast.EINVALID},
	} {
		c := ConfigFromEnv(tc.env)
		host, secure, err := c.hostAndTLS()
		if forecast.ErrorCode(err) != tc.code || host != tc.host || secure != tc.secure {
			t.Errorf("%s: (%q, %v, %v), want (%q, %v, code %q)", tc.note, host, secure, err, tc.host, tc.secure, tc.code)
		}
	}
	c := ConfigFromEnv(env("AWS_ACCESS_KEY_ID", "ak", "AWS_SECRET_ACCESS_KEY", "sk", "AWS_DEFAULT_REGION", "eu-1", "S3_VERIFY_SSL", "0"))
	if c.AccessKey != "ak" || c.SecretKey != "sk" || c.Region != "eu-1" || !c.InsecureSkipVerify {
		t.Fatalf("config=%+v", c)
	}
	if _, err := NewClient(Config{AccessKey: "only"}); forecast.ErrorCode(err) != forecast.EINVALID {
		t.Fatalf("half credentials: %v", err)
	}
}
