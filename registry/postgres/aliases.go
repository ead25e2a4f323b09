package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/internal/pgwire"
	"github.com/carbongate/carbongate/registry"
)

func aliasNotFound(name, alias string) error {
	return forecast.Errorf(forecast.ENOTFOUND, "Registered model alias %s not found for model %s.", alias, name)
}

// SetAlias points alias at a live version, replacing its previous target.
// It bumps no timestamp (as MLflow); watchers see the change through the
// alias table.
func (s *Store) SetAlias(ctx context.Context, name, alias string, version int64) error {
	if err := registry.ValidateAlias(alias); err != nil {
		return err
	}
	if err := checkVersion(name, version); err != nil {
		return err
	}
	return s.write(ctx, "set registered model alias", func(ctx context.Context, tx pgx.Tx, l layout) error {
		tag, err := tx.Exec(ctx, `INSERT INTO registered_model_aliases (`+l.wsCol()+`alias, version, name)
SELECT `+l.wsSel("v")+`$3, v.version, v.name FROM model_versions v
WHERE v.name = $1 AND v.version = $2`+l.ws("v")+notDeleted+`
ON CONFLICT `+l.key("name, alias")+` DO UPDATE SET version = EXCLUDED.version`, name, version, alias)
		if err == nil && tag.RowsAffected() == 0 {
			err = versionNotFound(name, version)
		}
		return err
	})
}

// DeleteAlias removes an alias; ENOTFOUND when the model or the alias does
// not exist.
func (s *Store) DeleteAlias(ctx context.Context, name, alias string) error {
	if err := registry.ValidateAlias(alias); err != nil {
		return err
	}
	return s.write(ctx, "delete registered model alias", func(ctx context.Context, tx pgx.Tx, l layout) error {
		if err := lockModel(ctx, tx, l, name); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM registered_model_aliases a WHERE a.name = $1 AND a.alias = $2`+l.ws("a"), name, alias)
		if err == nil && tag.RowsAffected() == 0 {
			err = aliasNotFound(name, alias)
		}
		return err
	})
}

// VersionByAlias returns the live version alias points at; ENOTFOUND when
// the model or the alias does not exist.
func (s *Store) VersionByAlias(ctx context.Context, name, alias string) (registry.ModelVersion, error) {
	if err := registry.ValidateAlias(alias); err != nil {
		return registry.ModelVersion{}, err
	}
	var v registry.ModelVersion
	err := s.read(ctx, "get model version by alias", func(ctx context.Context, q querier, l layout) error {
		var version int64
		err := q.QueryRow(ctx, `SELECT a.version FROM registered_model_aliases a WHERE a.name = $1 AND a.alias = $2`+l.ws("a"),
			name, alias).Scan(&version)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := getModel(ctx, q, l, name); err != nil {
				return err
			}
			return aliasNotFound(name, alias)
		}
		if err != nil {
			return err
		}
		v, err = getVersion(ctx, q, l, name, version)
		return err
	})
	return v, err
}

// AliasTargets lists every alias of every model, sorted by name then alias
// (byte order).
func (s *Store) AliasTargets(ctx context.Context) ([]registry.AliasTarget, error) {
	var out []registry.AliasTarget
	err := s.read(ctx, "list registered model aliases", func(ctx context.Context, q querier, l layout) error {
		rows, err := q.Query(ctx, `SELECT a.name, a.alias, a.version FROM registered_model_aliases a WHERE TRUE`+l.ws("a")+`
ORDER BY a.name`+byteOrder+`, a.alias`+byteOrder)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowToStructByPos[registry.AliasTarget])
		return err
	})
	return out, err
}

// WatchAliases LISTENs on NotifyChannel over a connection of its own and
// returns a channel that receives a value (coalesced: one pending value at
// most, never blocking the database) after every change to
// registered_model_aliases. The channel is closed when ctx ends, the
// connection is lost or the Store is closed; the caller then re-reads
// AliasTargets and may watch again. ENOTFOUND when the trigger is not
// installed (Migrate or InstallTrigger), so the caller polls instead.
func (s *Store) WatchAliases(ctx context.Context) (<-chan struct{}, error) {
	if s.watchCtx.Err() != nil {
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "postgres: store closed")
	}
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.watchCtx.Err() != nil {
		s.mu.Unlock()
		closeConn(conn)
		return nil, forecast.Errorf(forecast.EUNAVAILABLE, "postgres: store closed")
	}
	s.watchers.Add(1)
	s.mu.Unlock()
	ch := make(chan struct{}, 1)
	wctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.watchCtx, cancel)
	go func() {
		defer s.watchers.Done()
		defer close(ch)
		defer stop()
		defer cancel()
		defer closeConn(conn)
		for {
			if _, err := conn.WaitForNotification(wctx); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, nil
}

// listen opens the watch connection, LISTENs and checks that the trigger
// exists (after LISTEN, so no change in between is missed).
func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	ctx, cancel := pgwire.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, backend.Classify(ctx, "watch aliases", err)
	}
	var installed bool
	if _, err = conn.Exec(ctx, `LISTEN `+NotifyChannel); err == nil {
		err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_trigger
WHERE tgrelid = to_regclass('registered_model_aliases') AND tgname = $1)`, TriggerName).Scan(&installed)
	}
	if err == nil && !installed {
		err = forecast.Errorf(forecast.ENOTFOUND, "carbongate's trigger %s on registered_model_aliases is not installed: run `carbonctl registry migrate`", TriggerName)
	}
	if err != nil {
		closeConn(conn)
		return nil, backend.Classify(ctx, "watch aliases", err)
	}
	return conn, nil
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx)
}
