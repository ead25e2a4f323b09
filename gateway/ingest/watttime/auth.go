package watttime

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/carbongate/carbongate/forecast"
	"github.com/carbongate/carbongate/gateway/ingest"
)

// get sends GET path?q with a bearer token and decodes the answer into v.
// A 401 answer to a token that was not just issued makes it log in again
// and resend once.
func (c *Client) get(ctx context.Context, path string, q url.Values, v any) error {
	tok, fresh, err := c.bearer(ctx, "")
	if err != nil {
		return err
	}
	err = c.send(ctx, path, q, tok, v)
	if ingest.Status(err) == http.StatusUnauthorized && !fresh {
		c.log.LogAttrs(ctx, slog.LevelInfo, "watttime: token refused; logging in again", slog.String("path", path))
		if tok, _, err = c.bearer(ctx, tok); err != nil {
			return err
		}
		err = c.send(ctx, path, q, tok, v)
	}
	return err
}

// send sends GET path?q with tok and decodes the answer into v.
func (c *Client) send(ctx context.Context, path string, q url.Values, tok secret, v any) error {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	t0 := time.Now()
	err := c.caller.Get(ctx, u.String(), tok.bearer(), path, v)
	c.log.LogAttrs(ctx, slog.LevelDebug, "watttime: request", slog.String("path", path), slog.String("region", q.Get("region")),
		slog.Duration("took", time.Since(t0)), slog.String("code", forecast.ErrorCode(err)))
	return err
}

// bearer returns a valid token, logging in when there is none, when it is
// about to expire or when it is stale (the one the API just refused);
// fresh tells whether it was issued by this call.
func (c *Client) bearer(ctx context.Context, stale secret) (tok secret, fresh bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && c.token != stale && c.cfg.Now().Before(c.expires) {
		return c.token, false, nil
	}
	c.token = ""
	issued := c.cfg.Now()
	tok, err = c.login(ctx)
	if err != nil {
		return "", false, err
	}
	c.token, c.expires = tok, issued.Add(TokenLifetime-TokenMargin)
	return tok, true, nil
}

// login asks for a token: GET /login with HTTP basic auth.
func (c *Client) login(ctx context.Context) (secret, error) {
	const path = "/login"
	u := *c.base
	u.Path += path
	basic := base64.StdEncoding.EncodeToString([]byte(c.cfg.Username + ":" + c.cfg.Password))
	var r struct {
		Token string `json:"token"`
	}
	if err := c.caller.Get(ctx, u.String(), http.Header{"Authorization": {"Basic " + basic}}, path, &r); err != nil {
		if forecast.ErrorCode(err) == forecast.EUNAUTHORIZED {
			return "", &forecast.Error{Code: forecast.EUNAUTHORIZED, Message: "watttime: login refused: check the username and password", Err: err}
		}
		return "", err
	}
	if r.Token == "" {
		return "", forecast.Errorf(forecast.EUNAUTHORIZED, "watttime: login answered without a token")
	}
	c.log.LogAttrs(ctx, slog.LevelDebug, "watttime: logged in", slog.String("username", c.cfg.Username))
	return secret(r.Token), nil
}
