package pasture

import (
	"cmp"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crowdfed/crowd/adminapi"
)

// WorldPage describes the page q of the served world: its origins from
// q.Offset, at most q.Limit of them (0: adminapi.DefaultWorldPage), each
// with its actors, and the summary of the whole world. It computes only
// the page's actors, so it costs the same in a world of any size.
func (p *Pasture) WorldPage(q adminapi.WorldQuery) adminapi.WorldInfo {
	w := p.cfg.World
	if q.Limit <= 0 {
		q.Limit = adminapi.DefaultWorldPage
	}
	start := min(max(q.Offset, 0), len(w.Origins))
	end := min(start+q.Limit, len(w.Origins))
	sum := &adminapi.WorldSummary{Origins: w.Config.Origins, Served: len(w.Origins), ActorsPerOrigin: w.Config.Actors, Offset: start}
	if end < len(w.Origins) {
		sum.Next = end
	}
	info := adminapi.WorldInfo{Version: p.cfg.Version, Domain: w.Config.Domain, Zone: w.Config.Zone(), Shard: w.Config.Shard.String(),
		HTTPS: cmp.Or(p.Addr("https"), p.cfg.HTTPSAddr), Origins: []adminapi.OriginInfo{}, Summary: sum}
	for _, o := range w.Origins[start:end] {
		oi := adminapi.OriginInfo{Index: o.Index, Host: o.Host}
		for _, a := range o.Persons() {
			oi.Actors = append(oi.Actors, p.actorInfo(a.Acct(), a.ID, a.KeyID, a.Key.Public()))
		}
		oi.Instance = p.actorInfo(o.Instance.Acct(), o.Instance.ID, o.Instance.KeyID, o.Instance.Key.Public())
		info.Origins = append(info.Origins, oi)
	}
	info.Addresses = p.addressInfo()
	return info
}

func (p *Pasture) actorInfo(acct, id, keyID string, pub any) adminapi.ActorInfo {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	followers, following := p.cfg.World.Graph.Counts(id)
	return adminapi.ActorInfo{Acct: acct, ID: id, KeyID: keyID, KeySHA256: hex.EncodeToString(sum[:]), Followers: followers, Following: following}
}

// adminHandler builds the admin API: its own routes of adminapi's table
// (the page, health, readiness, metrics, the CA, the world and its weather), plus
// whatever Config.Admin adds (the inbox's routes), every route behind the
// adminGuard (own host names only; no cross-origin or non-JSON writes) and,
// off loopback, the adminAuth (the token, but on the open routes).
func (p *Pasture) adminHandler(reg *prometheus.Registry) {
	r := chi.NewRouter()
	r.Use(newAdminGuard(p.cfg.AdminAddr, p.cfg.AdminHosts).Wrap)
	if p.auth != nil {
		r.Use(p.auth.Wrap)
	}
	r.Use(middleware.GetHead) // HEAD of a GET route, as net/http's mux did (curl -I, probes)
	r.Handle(string(adminapi.RouteHealth), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	}))
	r.Handle(string(adminapi.RouteReady), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		ready := p.ready
		p.mu.Unlock()
		if !ready {
			http.Error(w, "not ready: listeners are starting or stopping", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	}))
	live := newFloodLive(time.Now, p.fetch) // what attached floods push: the admin page's live panel, and their metrics here
	live.routes(r.Handle)
	// A pushed family that clashes with another run's (a crowd of another
	// version) must not blank the serve's own metrics: the rest is served.
	r.Handle(string(adminapi.RouteMetrics), promhttp.HandlerFor(prometheus.Gatherers{reg, live},
		promhttp.HandlerOpts{Registry: reg, ErrorHandling: promhttp.ContinueOnError}))
	r.Handle(string(adminapi.RouteCA), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(p.ca.CertPEM())
	}))
	r.Handle(string(adminapi.RouteWorld), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := adminapi.ParseWorldQuery(r.URL.Query())
		if err != nil {
			adminapi.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		adminapi.WriteJSON(w, http.StatusOK, p.WorldPage(q))
	}))
	r.Handle(string(adminapi.RouteLogin), http.HandlerFunc(p.auth.login))
	r.Handle(string(adminapi.RoutePage), mustAdminPage()) // the admin page (page.html): world, follows, live activities
	p.fetch.Routes(r.Handle)
	p.weatherRoutes(r.Handle)
	if p.cfg.Admin != nil {
		p.cfg.Admin(r.Handle)
	}
	p.admin = r
	// A path the API does not serve answers in its error shape, naming what it does serve.
	r.NotFound(func(w http.ResponseWriter, req *http.Request) {
		adminapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("the admin API serves no %s %s; it serves %s",
			req.Method, req.URL.Path, strings.Join(p.AdminRoutes(), ", ")))
	})
	// A path it serves by other methods answers in the same shape, naming them.
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		var by []string
		for _, route := range p.AdminRoutes() {
			if method, path, _ := strings.Cut(route, " "); path == req.URL.Path {
				by = append(by, method)
			}
		}
		w.Header().Set("Allow", strings.Join(by, ", "))
		adminapi.WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("the admin API serves %s by %s, not %s",
			req.URL.Path, strings.Join(by, ", "), req.Method))
	})
}

// AdminHandler serves the admin API (as the --admin listener does); tests
// call it directly.
func (p *Pasture) AdminHandler() http.Handler { return p.admin }

// AdminRoutes lists the admin API's routes as "METHOD /path", sorted: the ones the router
// really serves, as a 404 names them and a test over them misses none.
func (p *Pasture) AdminRoutes() []string {
	var out []string
	chi.Walk(p.admin.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	slices.Sort(out)
	return out
}
