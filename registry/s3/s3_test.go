package s3

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/credentials"

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

// TestCredentialChain: static keys carry the session token; without them
// the shared credentials file's profile answers, a web identity token is
// exchanged at STS (EKS IRSA) for temporary keys, and a non-AWS store with
// nothing configured is accessed anonymously without asking the instance
// metadata service, which an AWS endpoint may.
func TestCredentialChain(t *testing.T) {
	for _, k := range []string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE"} {
		t.Setenv(k, "") // minio-go reads these from the process environment too
	}
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	get := func(t *testing.T, c Config, host string) credentials.Value {
		t.Helper()
		v, err := c.credentials(host).GetWithContext(&credentials.CredContext{Client: &http.Client{Timeout: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	c := ConfigFromEnv(env("AWS_ACCESS_KEY_ID", "ak", "AWS_SECRET_ACCESS_KEY", "sk", "AWS_SESSION_TOKEN", "tok"))
	if v := get(t, c, "s3.amazonaws.com"); v.AccessKeyID != "ak" || v.SecretAccessKey != "sk" || v.SessionToken != "tok" {
		t.Fatalf("static keys with a session token: %+v", v)
	}

	file := filepath.Join(t.TempDir(), "credentials")
	if err := os.WriteFile(file, []byte("[default]\naws_access_key_id = dak\naws_secret_access_key = dsk\n\n[carbongate]\naws_access_key_id = pak\naws_secret_access_key = psk\naws_session_token = ptok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = ConfigFromEnv(env("AWS_SHARED_CREDENTIALS_FILE", file, "AWS_PROFILE", "carbongate", "S3_ENDPOINT", "seaweed:8333"))
	if v := get(t, c, "seaweed:8333"); v.AccessKeyID != "pak" || v.SecretAccessKey != "psk" || v.SessionToken != "ptok" {
		t.Fatalf("shared credentials file, profile carbongate: %+v", v)
	}
	c.Profile = ""
	if v := get(t, c, "seaweed:8333"); v.AccessKeyID != "dak" {
		t.Fatalf("shared credentials file, default profile: %+v", v)
	}

	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("projected-sa-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	var form url.Values
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		form = r.Form
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprint(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>`+
			`<Credentials><AccessKeyId>wak</AccessKeyId><SecretAccessKey>wsk</SecretAccessKey><SessionToken>wtok</SessionToken>`+
			`<Expiration>`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`</Expiration></Credentials>`+
			`</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`)
	}))
	defer sts.Close()
	c = ConfigFromEnv(env("AWS_WEB_IDENTITY_TOKEN_FILE", tokenFile, "AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/carbongate",
		"AWS_ROLE_SESSION_NAME", "gw", "AWS_ENDPOINT_URL_STS", sts.URL, "AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none")))
	if v := get(t, c, "s3.amazonaws.com"); v.AccessKeyID != "wak" || v.SecretAccessKey != "wsk" || v.SessionToken != "wtok" {
		t.Fatalf("web identity: %+v", v)
	}
	if form.Get("Action") != "AssumeRoleWithWebIdentity" || form.Get("WebIdentityToken") != "projected-sa-token" ||
		form.Get("RoleArn") != "arn:aws:iam::123456789012:role/carbongate" || form.Get("RoleSessionName") != "gw" {
		t.Fatalf("STS was asked %v", form)
	}

	none := ConfigFromEnv(env("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"), "S3_ENDPOINT", "seaweed:8333"))
	if n := len(none.chain("seaweed:8333")); n != 1 {
		t.Fatalf("a non-AWS store without keys tries %d providers, want the shared file only (no instance metadata)", n)
	}
	if v := get(t, none, "seaweed:8333"); v.SignerType != credentials.SignatureAnonymous || v.AccessKeyID != "" {
		t.Fatalf("nothing configured: %+v, want anonymous", v)
	}
	if n := len(none.chain("s3.amazonaws.com")); n != 2 {
		t.Fatalf("AWS without keys tries %d providers, want the shared file and the instance role", n)
	}
	none.NoInstanceRole = true
	if n := len(none.chain("s3.eu-west-1.amazonaws.com")); n != 1 {
		t.Fatalf("AWS_EC2_METADATA_DISABLED: %d providers, want 1", n)
	}
	if !ConfigFromEnv(env("AWS_EC2_METADATA_DISABLED", "TRUE")).NoInstanceRole {
		t.Fatal("AWS_EC2_METADATA_DISABLED=TRUE not read")
	}
}
