package s3

import (
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/carbongate/carbongate/forecast"
)

// NewClient returns a minio-go client for c: the credentials Config
// describes (static keys, else the chain, else anonymous), TLS per
// Endpoint and Secure, path-style bucket lookup for non-AWS endpoints
// (minio-go decides). No credential is fetched before the first request.
func NewClient(c Config) (*minio.Client, error) {
	host, secure, err := c.hostAndTLS()
	if err != nil {
		return nil, err
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		return nil, forecast.Errorf(forecast.EINVALID, "S3 access key and secret key must be given together")
	}
	tr, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, err
	}
	if secure && c.InsecureSkipVerify && tr.TLSClientConfig != nil {
		tr.TLSClientConfig.InsecureSkipVerify = true
	}
	cl, err := minio.New(host, &minio.Options{Creds: c.credentials(host), Secure: secure, Region: c.Region, Transport: tr})
	if err != nil {
		return nil, forecast.Errorf(forecast.EINVALID, "S3 endpoint %q: %v", host, err)
	}
	return cl, nil
}

// credentials returns the credentials of c for the store at host (see
// Config).
func (c Config) credentials(host string) *credentials.Credentials {
	if c.AccessKey != "" {
		return credentials.NewStaticV4(c.AccessKey, c.SecretKey, c.SessionToken)
	}
	// When no provider yields keys, minio-go's chain signs nothing
	// (anonymous access, as before the chain).
	return credentials.NewChainCredentials(c.chain(host))
}

// chain returns the providers tried in turn without static keys: the
// shared credentials file, then minio-go's IAM provider when a role can
// apply: a web identity token file, a container credentials endpoint
// (AWS_CONTAINER_CREDENTIALS_*, which minio-go reads from the process
// environment), or an AWS endpoint where the EC2 instance role may answer.
// A non-AWS store (SeaweedFS, MinIO) never waits on the metadata service.
func (c Config) chain(host string) []credentials.Provider {
	out := []credentials.Provider{&credentials.FileAWSCredentials{Filename: c.SharedCredentialsFile, Profile: c.Profile}}
	container := os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") != "" || os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI") != ""
	aws := host == "s3.amazonaws.com" || strings.HasSuffix(host, ".amazonaws.com") || strings.Contains(host, ".amazonaws.com:")
	if c.WebIdentityTokenFile == "" && !container && (!aws || c.NoInstanceRole) {
		return out
	}
	iam := &credentials.IAM{Region: c.Region}
	if c.WebIdentityTokenFile != "" {
		iam.Endpoint = c.STSEndpoint // "" = the regional STS endpoint
		iam.EKSIdentity.TokenFile, iam.EKSIdentity.RoleARN, iam.EKSIdentity.RoleSessionName = c.WebIdentityTokenFile, c.RoleARN, c.RoleSessionName
	}
	return append(out, iam)
}
