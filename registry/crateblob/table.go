package crateblob

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/carbongate/carbongate/forecast"
)

// CreateTableSQL is the statement CreateTable runs for table: one shard
// (model artifacts are a few MB a version) and replicas '0-1', which
// CrateDB expands to one replica once a second node joins and to none on
// a single node, where a fixed replica would leave the table yellow.
func CreateTableSQL(table string) string {
	return fmt.Sprintf(`CREATE BLOB TABLE "%s" CLUSTERED INTO 1 SHARDS WITH (number_of_replicas = '0-1')`, table)
}

// CreateTable creates the blob table l names unless it exists (its
// settings are then left as they are), through CrateDB's /_sql endpoint
// on the same HTTP port.
func (c *Client) CreateTable(ctx context.Context, l Location) error {
	l = l.TableLocation()
	err := c.sql(ctx, l, CreateTableSQL(l.Table))
	if forecast.ErrorCode(err) == forecast.ECONFLICT {
		return nil // RelationAlreadyExists
	}
	return err
}

// sql runs one statement with no result rows. 409 (CrateDB's
// "already exists" answers) is ECONFLICT.
func (c *Client) sql(ctx context.Context, l Location, stmt string) error {
	body, err := json.Marshal(map[string]string{"stmt": stmt})
	if err != nil {
		return err
	}
	u := strings.TrimSuffix(blobURL(l.TableLocation()), "/_blobs/"+l.Table) + "/_sql"
	resp, cancel, err := c.doType(ctx, http.MethodPost, u, "application/json", bytes.NewReader(body), int64(len(body)), l)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		return nil
	case resp.StatusCode == http.StatusConflict:
		return forecast.Errorf(forecast.ECONFLICT, "%s: %s", l, resp.Status)
	}
	return statusError("SQL on", l, resp)
}
