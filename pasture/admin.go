package pasture

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// WorldInfo is the admin API's description of the world (/api/world).
// It never carries a private key.
type WorldInfo struct {
	Version string       `json:"version"`
	Domain  string       `json:"domain"`
	Zone    string       `json:"zone"`
	Shard   string       `json:"shard,omitempty"`
	Origins []OriginInfo `json:"origins"`
}

// OriginInfo describes one origin.
type OriginInfo struct {
	Index    int         `json:"index"`
	Host     string      `json:"host"`
	Instance ActorInfo   `json:"instance"`
	Actors   []ActorInfo `json:"actors"`
}

// ActorInfo describes one actor and its public key.
type ActorInfo struct {
	Acct  string `json:"acct"`
	ID    string `json:"id"`
	KeyID string `json:"key_id"`
	// KeySHA256 is the hex SHA-256 of the public key's SPKI DER: compare
	// it with what a SUT cached to find a stale key.
	KeySHA256 string `json:"key_sha256"`
	Followers int    `json:"followers"`
	Following int    `json:"following"`
}

// World describes the served world for the admin API.
func (p *Pasture) World() WorldInfo {
	w := p.cfg.World
	info := WorldInfo{Version: p.cfg.Version, Domain: w.Config.Domain, Zone: w.Config.Zone(), Shard: w.Config.Shard.String()}
	for _, o := range w.Origins {
		oi := OriginInfo{Index: o.Index, Host: o.Host}
		for _, a := range o.Actors {
			oi.Actors = append(oi.Actors, p.actorInfo(a.Acct(), a.ID, a.KeyID, a.Key.Public()))
		}
		oi.Instance = p.actorInfo(o.Instance.Acct(), o.Instance.ID, o.Instance.KeyID, o.Instance.Key.Public())
		info.Origins = append(info.Origins, oi)
	}
	return info
}

func (p *Pasture) actorInfo(acct, id, keyID string, pub any) ActorInfo {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	followers, following := p.cfg.World.Graph.Counts(id)
	return ActorInfo{Acct: acct, ID: id, KeyID: keyID, KeySHA256: hex.EncodeToString(sum[:]), Followers: followers, Following: following}
}

// adminHandler builds the admin API: health, readiness, metrics, the CA
// and the world, plus whatever Config.Admin adds, every route behind the
// adminGuard (own host names only; no cross-origin or non-JSON writes).
func (p *Pasture) adminHandler(reg *prometheus.Registry) {
	r := chi.NewRouter()
	r.Use(newAdminGuard(p.cfg.AdminAddr, p.cfg.AdminHosts).Wrap)
	r.Use(middleware.GetHead) // HEAD of a GET route, as net/http's mux did (curl -I, probes)
	r.Handle("GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	}))
	r.Handle("GET /readyz", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		ready := p.ready
		p.mu.Unlock()
		if !ready {
			http.Error(w, "not ready: listeners are starting or stopping", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	}))
	r.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	r.Handle("GET /ca.pem", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-pem-file")
		w.Write(p.ca.CertPEM())
	}))
	r.Handle("GET /api/world", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeAdminJSON(w, p.World())
	}))
	r.Handle("GET /", mustAdminPage()) // the admin page (page.html): world, follows, live activities
	if p.cfg.Admin != nil {
		p.cfg.Admin(r.Handle)
	}
	p.admin = r
}

// AdminHandler serves the admin API (as the --admin listener does); tests
// call it directly.
func (p *Pasture) AdminHandler() http.Handler { return p.admin }

// AdminRoutes lists the admin API's routes as "METHOD /path", sorted: the
// ones the router really serves, so a test over them misses none.
func (p *Pasture) AdminRoutes() []string {
	var out []string
	chi.Walk(p.admin.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	slices.Sort(out)
	return out
}

func writeAdminJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
