package switchboard

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// SecretMask replaces every secret value (env and header values, the OAuth
// client secret) on reads.
// A write that sends it back keeps the stored value.
const SecretMask = "***"

// Masked returns a copy of c with every env and header value and the OAuth
// client secret replaced by SecretMask, and the credentials in its URL (a userinfo password,
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
	if m.OAuth != nil && m.OAuth.ClientSecret != "" {
		m.OAuth.ClientSecret = SecretMask
	}
	return m
}

// Unmask returns a copy of c in which every value equal to SecretMask is
// replaced by the value stored under the same key in prev. A masked value
// with no stored counterpart is an error: the caller sent back a mask for a
// secret that does not exist. So is a masked value for a new destination:
// a stored secret goes only where it went before (the same URL origin, the
// same command and arguments), or changing the URL of a server would hand
// its stored credentials to whoever runs the new one.
func (c *ServerConfig) Unmask(prev *ServerConfig) (*ServerConfig, error) {
	out := c.Clone()
	moved := ""
	if prev != nil {
		moved = movedDestination(prev, out)
	}
	restore := func(field string, dst, src map[string]string) error {
		for k, v := range dst {
			if v != SecretMask {
				continue
			}
			old, ok := src[k]
			switch {
			case !ok:
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but no secret is stored under that name`}}}
			case moved != "":
				return &ValidationError{Fields: []*FieldError{{Field: field,
					Message: "value of " + k + ` is "***" but the ` + moved + ` changed: a stored secret is kept only for the same destination; send the value again`}}}
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
	if out.OAuth != nil && out.OAuth.ClientSecret == SecretMask {
		var stored map[string]string
		if prev != nil && prev.OAuth != nil && prev.OAuth.ClientSecret != "" {
			stored = map[string]string{"client_secret": prev.OAuth.ClientSecret}
		}
		secret := map[string]string{"client_secret": SecretMask}
		if err := restore("oauth", secret, stored); err != nil {
			return nil, err
		}
		out.OAuth.ClientSecret = secret["client_secret"]
	}
	return out, nil
}

// movedDestination names what makes c send its secrets somewhere other
// than prev did ("URL's origin", "command", "arguments", "transport"), or
// returns "" if they go to the same place.
func movedDestination(prev, c *ServerConfig) string {
	switch {
	case prev.Transport != c.Transport && (prev.IsStdio() || c.IsStdio()):
		return "transport"
	case c.IsStdio() && prev.Command != c.Command:
		return "command"
	case c.IsStdio() && !slices.Equal(prev.Args, c.Args):
		return "arguments"
	case !c.IsStdio() && origin(prev.URL) != origin(c.URL):
		return "URL's origin"
	}
	return ""
}

// origin returns the scheme, host and port of a URL, normalised, or the
// raw string if it does not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// credentialWords are the parts of a name (a query parameter, mostly) that
// say its value is a credential. One list serves masking (MaskURL) and
// redaction (Redactor), so a view and a log line hide the same things.
const credentialWords = `token|key|secret|pass|pwd|auth|signature|sig|credential`

var (
	// credentialParam matches query parameter names that carry credentials.
	credentialParam = regexp.MustCompile(`(?i)(` + credentialWords + `)`)
	// userinfoRE and credentialQueryRE find the same credentials in free
	// text (an error message, a URL inside one).
	userinfoRE        = regexp.MustCompile(`(https?://)[^/@\s]+@`)
	credentialQueryRE = regexp.MustCompile(`(?i)([?&](?:[a-z0-9_-]*(?:` + credentialWords + `)[a-z0-9_-]*)=)[^&\s"']+`)
)

// MaskURL returns raw with its credentials replaced by SecretMask: the
// password of its userinfo (or the user name, when it comes alone: a token
// given as https://TOKEN@host), the values of credential-like query
// parameters, and path segments that look like keys (secretSegment). A
// string that does not parse as a URL is returned as is.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return raw
	}
	// url.User and url.UserPassword would escape the mask ("%2A%2A%2A"):
	// a placeholder is put there instead, and replaced at the end.
	const mark = "switchboard-masked"
	if u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), mark)
		} else if u.User.Username() != "" {
			u.User = url.User(mark)
		}
	}
	segs, masked := strings.Split(u.EscapedPath(), "/"), false
	for i, seg := range segs {
		if p, err := url.PathUnescape(seg); err == nil && secretSegment(p) {
			segs[i], masked = SecretMask, true
		}
	}
	if masked {
		u.RawPath = strings.Join(segs, "/")
		u.Path, _ = url.PathUnescape(u.RawPath)
	}
	if u.RawQuery != "" {
		// Value by value, in place: re-encoding would reorder the query.
		pairs := strings.Split(u.RawQuery, "&")
		for i, p := range pairs {
			k, _, ok := strings.Cut(p, "=")
			if name, err := url.QueryUnescape(k); ok && err == nil && credentialParam.MatchString(name) {
				pairs[i] = k + "=" + SecretMask
			}
		}
		u.RawQuery = strings.Join(pairs, "&")
	}
	return strings.Replace(u.String(), mark+"@", SecretMask+"@", 1)
}

// secretSegment reports whether a URL path segment looks like a key rather
// than a name: 20 or more characters of a token alphabet, with both letters
// and digits. Hosted MCP servers put keys in paths
// (https://host/mcp/sk-ab12.../sse); a false positive only hides a name
// from views, which a write that sends the view back restores.
func secretSegment(seg string) bool {
	if len(seg) < 20 {
		return false
	}
	letters, digits := false, false
	for _, r := range seg {
		switch {
		case r >= '0' && r <= '9':
			digits = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letters = true
		case r == '-', r == '_', r == '.', r == '~':
		default:
			return false
		}
	}
	return letters && digits
}

// urlRE finds URLs in free text, for the Redactor.
var urlRE = regexp.MustCompile(`https?://[^\s"'<>]+`)

// Redactor removes a server's secrets from text shown to people (error
// messages, logs): every env and header value and the OAuth client secret
// of its config, URL userinfo,
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
	s = urlRE.ReplaceAllStringFunc(s, MaskURL)
	s = userinfoRE.ReplaceAllString(s, "${1}"+SecretMask+"@")
	return credentialQueryRE.ReplaceAllString(s, "${1}"+SecretMask)
}
