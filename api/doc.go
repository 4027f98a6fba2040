// Package api holds the wire types of Switchboard's HTTP API: the JSON
// bodies of its requests and answers, the error shape every route shares,
// and the names of the server-sent events it streams. The server (package
// httpapi) writes them and the client (package client) reads them, so the
// two cannot drift apart. Server configs, views and runtime info are the
// domain's own types (sb.ServerConfig, sb.ServerView, sb.RuntimeInfo),
// sent as they are.
//
// The routes, all under a bearer token when the daemon has one (but
// /healthz):
//
//	GET    /healthz                          "ok" (text/plain), without a token
//	GET    /metrics                          Prometheus text exposition
//	GET    /api/v1/servers                   ServerList
//	POST   /api/v1/servers                   sb.ServerConfig -> 201 sb.ServerView
//	GET    /api/v1/servers/{name}            sb.ServerView
//	PUT    /api/v1/servers/{name}            sb.ServerConfig (+ "version" or If-Match) -> sb.ServerView
//	DELETE /api/v1/servers/{name}            (If-Match or ?version=) -> 204
//	POST   /api/v1/servers/{name}/enable     sb.ServerView
//	POST   /api/v1/servers/{name}/disable    sb.ServerView
//	POST   /api/v1/servers/{name}/restart    202 RestartResponse
//	POST   /api/v1/servers/{name}/auth       AuthStart (see oauth.go); GET: AuthStatus; DELETE: 204
//	POST   /api/v1/servers/{name}/test       TestResult
//	GET    /api/v1/servers/{name}/tools      ToolList
//	GET    /api/v1/servers/{name}/logs       LogLines (?tail=N); ?follow=true: events (EventLog, EventStatus)
//	GET    /api/v1/servers/{name}/stats      Stats: the last hour of its calls, by the minute
//	GET    /api/v1/stats                     Stats: every call of the daemon, with a line per server
//	POST   /api/v1/test                      sb.ServerConfig -> TestResult
//	GET    /api/v1/tools                     ToolList; ?search=Q[&limit=N]: ToolHits, best first
//	POST   /api/v1/call                      CallRequest -> CallResponse, or events (Accept: text/event-stream)
//	POST   /api/v1/elicitations/{id}         ElicitationAnswer -> 204
//	GET    /api/v1/events                    events (EventStatus)
//	POST   /api/v1/import                    ImportRequest -> ImportReport
//	POST   /api/v1/login-codes               201 LoginCode (only with the token; serve's web page)
//
// A config refused by validation is answered with sb.CodeInvalidConfig
// and, in ErrorInfo.Fields, each bad field with its message.
//
// serve's web page is served at / and under /ui/ without the token; its
// session cookie, with the CSRF header on requests that change state, is
// accepted on /api/v1/ in place of the token (see package web).
//
// Every failure is answered with an ErrorBody and the status the error's
// code maps to (see httpapi.Status), but for a known route under a method
// it does not take: 405, code method_not_allowed, with an Allow header.
package api
