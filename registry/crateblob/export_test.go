package crateblob

import (
	"context"
	"fmt"
)

// DropTable drops the blob table l names, if any (test cleanup: blob
// tables live in the "blob" schema, which dropping a test's schema leaves).
func (c *Client) DropTable(ctx context.Context, l Location) error {
	return c.sql(ctx, l, fmt.Sprintf(`DROP BLOB TABLE IF EXISTS "%s"`, l.Table))
}
