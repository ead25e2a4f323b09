package s3

import (
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/carbongate/carbongate/forecast"
)

// NewClient returns a minio-go client for c: static V4 credentials (or
// anonymous access when both keys are empty), TLS per Endpoint and Secure,
// path-style bucket lookup for non-AWS endpoints (minio-go decides).
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
	var creds *credentials.Credentials
	if c.AccessKey != "" {
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, "")
	} else {
		creds = credentials.NewStaticV4("", "", "") // anonymous: requests are not signed
	}
	cl, err := minio.New(host, &minio.Options{Creds: creds, Secure: secure, Region: c.Region, Transport: tr})
	if err != nil {
		return nil, forecast.Errorf(forecast.EINVALID, "S3 endpoint %q: %v", host, err)
	}
	return cl, nil
}
