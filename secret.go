package switchboard

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// SecretMask replaces every secret value (env and header values) on reads.
// A write that sends it back keeps the stored value.
const SecretMask = "***"

// Masked returns a copy of c with every env and header value replaced by
// SecretMask, and the credentials in its URL (a userinfo password,
// credential-like query parameters) too.
func (c *ServerConfig) Masked() *ServerConfig {
	m := c.Clone()
	m.URL = MaskURL(c.URL)
	for k := range m.Env {
		m.Env[k] = SecretMask
	}
	for k := range m.Headers {
		m.Headers[k] = SecretMask
	}
	return m
}

// Unmask returns a copy of c in which every value equal to SecretMask is
// replaced by the value stored under the same key in prev. A masked value
// with no stored counterpart is an error: the caller sent back a mask for a
// secret that does not exist.
func (c *ServerConfig) Unmask(prev *ServerConfig) (*ServerConfig, error) {
	out := c.Clone()
	restore := func(field string, dst, src map[string]string) error {
		for k, v := range dst {
			if v != SecretMask {
				continue
			}
			old, ok := src[k]
			if !ok {
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but no secret is stored under that name`}}}
			}
			dst[k] = old
		}
		return nil
	}
	var penv, phdr map[string]string
	if prev != nil {
		penv, phdr = prev.Env, prev.Headers
		// A URL sent back as it was shown keeps its stored credentials.
		if out.URL != prev.URL && out.URL == MaskURL(prev.URL) {
			out.URL = prev.URL
		}
	}
	if err := restore("env", out.Env, penv); err != nil {
		return nil, err
	}
	if err := restore("headers", out.Headers, phdr); err != nil {
		return nil, err
	}
	return out, nil
}

// credentialWords are the parts of a name (a query parameter, mostly) that
// say its value is a credential. One list serves masking (MaskURL) and
// redaction (Redactor), so a view and a log line hide the same things.
const credentialWords = `token|key|secret|password|passwd|auth|signature|sig|credential`

var (
	// credentialParam matches query parameter names that carry credentials.
	credentialParam = regexp.MustCompile(`(?i)(` + credentialWords + `)`)
	// userinfoRE and credentialQueryRE find the same credentials in free
	// text (an error message, a URL inside one).
	userinfoRE        = regexp.MustCompile(`(https?://)[^/@\s]+@`)
	credentialQueryRE = regexp.MustCompile(`(?i)([?&](?:[a-z0-9_-]*(?:` + credentialWords + `)[a-z0-9_-]*)=)[^&\s"']+`)
)

// MaskURL returns raw with the password of its userinfo and the values of
// credential-like query parameters replaced by SecretMask. A string that
// does not parse as a URL is returned as is.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.User == nil && u.RawQuery == "") {
		return raw
	}
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), SecretMask)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for k := range q {
			if credentialParam.MatchString(k) {
				for i := range q[k] {
					q[k][i] = SecretMask
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// Redactor removes a server's secrets from text shown to people (error
// messages, logs): every env and header value of its config, URL userinfo,
// and credential-like query parameters. It is safe for concurrent use.
type Redactor struct{ secrets []string }

// minSecretLen avoids scrubbing short values ("1", "on") that would mangle
// every message while protecting nothing.
const minSecretLen = 4

// NewRedactor returns a redactor for cfg's secrets.
func NewRedactor(cfg *ServerConfig) *Redactor {
	var s []string
	for _, v := range cfg.Secrets() {
		if len(v) >= minSecretLen {
			s = append(s, v)
		}
	}
	// Longest first, so a secret containing another is removed whole.
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return &Redactor{secrets: s}
}

// String returns s with every secret replaced by SecretMask.
func (r *Redactor) String(s string) string {
	for _, v := range r.secrets {
		s = strings.ReplaceAll(s, v, SecretMask)
	}
	s = userinfoRE.ReplaceAllString(s, "${1}"+SecretMask+"@")
	return credentialQueryRE.ReplaceAllString(s, "${1}"+SecretMask)
}
