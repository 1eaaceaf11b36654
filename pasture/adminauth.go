package pasture

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/crowdfed/crowd/adminapi"
)

// adminAuth requires the admin token of every request but those to the
// open routes, when the admin API listens off loopback: there the SUT and
// every other container reach it, and a client with no Origin passes the
// adminGuard, while the API signs and sends for the crowd's actors.
//
// A client sends the token as "Authorization: Bearer TOKEN". A browser
// cannot be given a header, so the admin page logs in once through a link
// (RouteLogin with a single-use code) that sets an HttpOnly, SameSite=Strict
// cookie holding a session value: an HMAC of the token, so that the cookie
// never holds the token itself and needs no session table.
type adminAuth struct {
	plain   string            // the token, for the crowd's own clients (Pasture.AdminToken)
	token   [sha256.Size]byte // the token's digest: compared in constant time, whatever the length sent
	session string            // the cookie's value
	cookie  string            // the cookie's name

	mu    sync.Mutex
	codes []string // pending login codes, oldest first, at most maxLoginCodes
}

// sessionCookie prefixes the name of the admin page's session cookie. A
// browser keeps cookies by host, not port, so two crowds on one machine
// would overwrite each other's under one name: the rest of the name is
// the start of the session value's digest, one per token.
const sessionCookie = "crowd_admin_session_"

// maxLoginCodes bounds the pending login codes: minting one more forgets
// the oldest.
const maxLoginCodes = 16

func newAdminAuth(token string) *adminAuth {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("crowd admin page session"))
	a := &adminAuth{plain: token, token: sha256.Sum256([]byte(token)), session: hex.EncodeToString(mac.Sum(nil))}
	name := sha256.Sum256([]byte(a.session))
	a.cookie = sessionCookie + hex.EncodeToString(name[:4])
	return a
}

// AdminToken is the token the admin API requires, "" when it requires
// none (on loopback): what a client in this process sends.
func (p *Pasture) AdminToken() string {
	if p.auth == nil {
		return ""
	}
	return p.auth.plain
}

// openPath reports whether path is one of the routes served without a
// token: probes, the scrape and the CA, which a kubelet, Prometheus and a
// SUT's set-up read and which neither change nor reveal the crowd's
// actors; and the login link, which checks its own code.
func openPath(path string) bool {
	switch path {
	case adminapi.RouteHealth.Path(), adminapi.RouteReady.Path(), adminapi.RouteMetrics.Path(),
		adminapi.RouteCA.Path(), adminapi.RouteLogin.Path():
		return true
	}
	return false
}

// Wrap requires the token (a bearer token or the session cookie) of every
// request to next but those to the open routes.
func (a *adminAuth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPath(r.URL.Path) || a.authorized(r) {
			next.ServeHTTP(w, r)
			return
		}
		_, sent := bearer(r)
		refuse(w, sent, "this admin API listens off loopback and needs its token: send Authorization: Bearer TOKEN "+
			"(TOKEN is CROWD_ADMIN_TOKEN, or the admin-token file in the crowd's --state), or open the admin page through the login link crowd serve logged")
	})
}

// refuse answers 401 with the challenge RFC 6750 asks for; invalid says a
// token was sent and is not the one.
func refuse(w http.ResponseWriter, invalid bool, reason string) {
	challenge := `Bearer realm="crowd admin API"`
	if invalid {
		challenge += `, error="invalid_token"`
		reason = "the admin token sent is not this crowd's: " + reason
	}
	w.Header().Set("WWW-Authenticate", challenge)
	adminapi.WriteError(w, http.StatusUnauthorized, reason)
}

// bearer is the token r's Authorization header carries, if it carries one.
func bearer(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// authorized reports whether r carries the token or the page's session.
func (a *adminAuth) authorized(r *http.Request) bool {
	if token, ok := bearer(r); ok {
		sum := sha256.Sum256([]byte(token))
		return subtle.ConstantTimeCompare(sum[:], a.token[:]) == 1
	}
	c, err := r.Cookie(a.cookie)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.session)) == 1
}

// loginCode mints a single-use login code.
func (a *adminAuth) loginCode() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	code := hex.EncodeToString(b)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.codes) >= maxLoginCodes {
		a.codes = a.codes[1:]
	}
	a.codes = append(a.codes, code)
	return code
}

// useCode reports whether code is a pending login code, and forgets it.
func (a *adminAuth) useCode(code string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, c := range a.codes {
		if subtle.ConstantTimeCompare([]byte(c), []byte(code)) == 1 {
			a.codes = append(a.codes[:i], a.codes[i+1:]...)
			return true
		}
	}
	return false
}

// login serves RouteLogin: a pending code sets the session cookie and
// sends the browser to the page; any other is 401. Without a (nil) auth,
// on loopback, it only sends the browser to the page.
func (a *adminAuth) login(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if a != nil {
		if !a.useCode(r.URL.Query().Get(adminapi.ParamOnce)) {
			refuse(w, false, "this login link was used already, or is not one this crowd made: each start of crowd serve logs a new one")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: a.cookie, Value: a.session, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode})
	}
	http.Redirect(w, r, adminapi.RoutePage.Path(), http.StatusSeeOther)
}

// AdminPageLink is the address to open the admin page at: on loopback the
// page itself; off loopback a login link with a new single-use code (each
// call makes one; the oldest of more than 16 unused ones stops working).
// It is "" before Start or without an admin listener.
func (p *Pasture) AdminPageLink() string {
	addr := p.Addr("admin")
	if addr == "" {
		return ""
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			addr = net.JoinHostPort("127.0.0.1", port) // a wildcard listens on loopback too
		}
	}
	if p.auth == nil {
		return "http://" + addr + adminapi.RoutePage.Path()
	}
	return "http://" + addr + adminapi.RouteLogin.Path() + "?" + adminapi.ParamOnce + "=" + p.auth.loginCode()
}
