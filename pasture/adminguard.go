package pasture

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/crowdfed/crowd/adminapi"
)

// adminGuard keeps web pages away from the admin API, which signs and
// sends activities for the crowd's actors. A page open in the user's
// browser can reach 127.0.0.1 too: by DNS rebinding (its own name made to
// resolve to the admin's address, so the Host header carries that name)
// or by a cross-origin "simple" POST (text/plain, no preflight). So:
//
//   - every request's Host must be one of the admin's own names: an IP
//     literal (rebinding needs a name), localhost, the --admin host, this
//     machine's host name, or one added with --admin-host; otherwise 421;
//   - a request that changes state (not GET, HEAD or OPTIONS), or a GET
//     that makes the crowd send (a lookup signs and fetches, so an <img>
//     on any page could aim the crowd's signed GETs anywhere), must not
//     come from another origin (its Origin header, or, without one, a
//     browser's Sec-Fetch-Site saying cross-site): 403;
//   - and its body must be application/json, which a page cannot send
//     cross-origin without a preflight the admin never answers: 403, since
//     this is a refusal of who may write, not a media type to negotiate.
//
// The port is not compared: a port forward (kubectl port-forward, ssh -L)
// changes it, and a rebinding attack is told apart by the name alone.
type adminGuard struct {
	names map[string]bool // lower case, no port, no trailing dot
}

// newAdminGuard accepts localhost, the host of the admin's listen address
// (when it is a name), the machine's host name and extra.
func newAdminGuard(listen string, extra []string) *adminGuard {
	g := &adminGuard{names: map[string]bool{"localhost": true}}
	add := func(h string) {
		if h = normName(h); h != "" && net.ParseIP(h) == nil {
			g.names[h] = true
		}
	}
	if h, _, err := net.SplitHostPort(listen); err == nil {
		add(h)
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
		add(strings.SplitN(h, ".", 2)[0]) // the short name of an FQDN
	}
	for _, h := range extra {
		add(h)
	}
	return g
}

// normName lower-cases a host name and drops its port, brackets and
// trailing dot.
func normName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}

// ownHost reports whether host (a Host header) names the admin API.
func (g *adminGuard) ownHost(host string) bool {
	h := normName(host)
	return h != "" && (net.ParseIP(h) != nil || g.names[h])
}

// Wrap guards next (every route, unknown paths included).
func (g *adminGuard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.ownHost(r.Host) {
			adminapi.WriteError(w, http.StatusMisdirectedRequest, fmt.Sprintf(
				"Host %q is not a name of this admin API (use 127.0.0.1, localhost or the --admin host, or add the name with crowd serve --admin-host)", r.Host))
			return
		}
		reads := r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions
		if reads && !sends(r) {
			next.ServeHTTP(w, r)
			return
		}
		if reason := foreignOrigin(r); reason != "" {
			adminapi.WriteError(w, http.StatusForbidden, reason+": a web page may not drive the crowd's admin API")
			return
		}
		if !reads && hasBody(r) {
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
				adminapi.WriteError(w, http.StatusForbidden, fmt.Sprintf("Content-Type %q: the admin API takes writes only as application/json", r.Header.Get("Content-Type")))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sends reports whether r, a GET, makes the crowd send: a lookup signs a
// WebFinger query and the actor's fetch, to whatever host it names.
func sends(r *http.Request) bool { return r.URL.Path == adminapi.RouteLookup.Path() }

// foreignOrigin says why r comes from another origin than the admin's own
// (scheme://Host), or "" when it does not: a non-browser client sends no
// Origin and no Sec-Fetch-Site.
func foreignOrigin(r *http.Request) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		switch site := r.Header.Get("Sec-Fetch-Site"); site {
		case "", "same-origin", "none":
			return ""
		default:
			return fmt.Sprintf("a %s request (Sec-Fetch-Site)", site)
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
		return fmt.Sprintf("Origin %q is not this admin API's (%s)", origin, r.Host)
	}
	return ""
}

// hasBody reports whether r carries a body (a DELETE usually does not).
func hasBody(r *http.Request) bool {
	return r.ContentLength != 0 || len(r.TransferEncoding) > 0 || r.Method != http.MethodDelete
}
