package registry

import (
	"context"
	"errors"
	"time"

	sb "github.com/switchboard-mcp/switchboard"
)

// This file keeps the servers that require OAuth in step with the grants
// other processes write (issue #17). Every write of a grant (an
// authorization, a refresh, a forget) is announced by the store's feed
// (sb.ChangeOAuth): this replica drops its copy of the grant, and if the
// write is a person's authorization, a server of its own that waits in
// phase auth reconnects at once rather than at its next slow retry (up to
// ten minutes away). A resync, which follows every (re)connection of the
// feed, looks at every server so, in case an announcement was missed.

// followMove drops the OAuth tokens of a server whose URL changed from
// prev's to st's, if they were granted for another origin than the new
// URL's (oauthclient.Client.Moved): the copy this replica holds, and the
// stored ones, before the session restarts with the new config, which then
// waits in phase auth for an authorization at its new address. It runs
// where the change is made (Update) and where another replica's change is
// applied (syncEntry), so a change made in psql is followed too. A failure
// is logged: the token source refuses to send the tokens elsewhere anyway.
func (r *Registry) followMove(ctx context.Context, prev *sb.ServerConfig, st sb.StoredServer) {
	o := r.opts.Session.OAuth
	if o == nil || prev.URL == st.Config.URL {
		return
	}
	if err := o.Moved(ctx, &st.Config, st.UpdatedAt); err != nil {
		r.log.Warn("dropping the OAuth tokens of a server that moved to another address", "server", st.Config.Name, "error", err)
	}
}

// followOAuth applies c to the servers that require OAuth, if this
// registry's sessions keep OAuth tokens.
func (r *Registry) followOAuth(ctx context.Context, c sb.Change) error {
	o := r.opts.Session.OAuth
	if o == nil {
		return nil
	}
	switch c.Kind {
	case sb.ChangeOAuth:
		o.Invalidate(c.Name)
		if c.Version == 0 { // forgotten: the sessions find out at their next request
			return nil
		}
		return r.reconnectAuthorized(ctx, c.Name)
	case sb.ChangeResync:
		var errs []error
		for _, name := range r.Names() {
			errs = append(errs, r.reconnectAuthorized(ctx, name))
		}
		return errors.Join(errs...)
	}
	return nil
}

// reconnectAuthorized restarts the server name if it waits in phase auth
// since before a person authorized the grant stored now. A server that
// waits for nothing, or for a grant still missing, or that failed with
// the new grant already (its tokens refused, more scopes asked for), is
// left alone: writes of the grant that do not come from a person (a
// refresh, a step-up's scopes, a client credentials token) never restart
// anything, so no failure can become a loop of restarts and refreshes.
func (r *Registry) reconnectAuthorized(ctx context.Context, name string) error {
	s, ok := r.Session(name)
	if !ok || s == nil || s.Config().OAuth == nil {
		return nil
	}
	info := s.Info()
	if !inPhaseAuth(info) {
		return nil
	}
	at, err := r.opts.Session.OAuth.AuthorizedAt(ctx, name)
	if err != nil || !waitsFor(info, at) {
		return err
	}
	r.log.Info("a server waiting for an OAuth authorization was authorized; reconnecting it", "server", name)
	// Not Restart: the session may have connected since its info was read
	// (its own slow retry found the grant), and a restart would cut the
	// calls it serves by then.
	if err := r.RetryNow(name); err != nil && !errors.Is(err, ErrDisabled) && !errors.Is(err, sb.ErrNotFound) {
		return err
	}
	return nil
}

// inPhaseAuth reports whether a session waits in phase auth.
func inPhaseAuth(info sb.RuntimeInfo) bool {
	return info.Status == sb.StatusError && info.Error != nil && info.Error.Phase == sb.PhaseAuth
}

// waitsFor reports whether a session in phase auth failed before the
// authorization made at authorized (zero: none), and so may now connect.
func waitsFor(info sb.RuntimeInfo, authorized time.Time) bool {
	return !authorized.IsZero() && info.Error.At.Before(authorized)
}
