package tracing

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// QueryTracer returns the pgx hook that makes a client span per query
// (named by its first SQL keyword, with the statement and the database's
// name) when tracing is on, and nil otherwise: set it as a pgx
// ConnConfig.Tracer when building a pool.
func QueryTracer() pgx.QueryTracer {
	if !on.Load() {
		return nil
	}
	return queryTracer{}
}

type queryTracer struct{}

var _ pgx.QueryTracer = queryTracer{}

func (queryTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	name, _, _ := strings.Cut(strings.TrimSpace(data.SQL), " ")
	ctx, span := Start(ctx, strings.ToUpper(name), trace.SpanKindClient)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.system", "postgresql"), attribute.String("db.statement", data.SQL))
		if conn != nil {
			span.SetAttributes(attribute.String("db.name", conn.Config().Database))
		}
	}
	return ctx
}

func (queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	End(trace.SpanFromContext(ctx), data.Err)
}
