package webfinger

import (
	"net/http"

	"github.com/crowdfed/crowd/apclient"
)

// NodeInfo schema URIs the crowd serves.
const (
	NodeInfo20 = "http://nodeinfo.diaspora.software/ns/schema/2.0"
	NodeInfo21 = "http://nodeinfo.diaspora.software/ns/schema/2.1"
)

// NodeInfoDoc is a NodeInfo 2.0 or 2.1 document.
type NodeInfoDoc struct {
	Version           string         `json:"version"`
	Software          Software       `json:"software"`
	Protocols         []string       `json:"protocols"`
	Services          Services       `json:"services"`
	OpenRegistrations bool           `json:"openRegistrations"`
	Usage             Usage          `json:"usage"`
	Metadata          map[string]any `json:"metadata"`
}

// Software names the server software; repository and homepage are 2.1.
type Software struct {
	Name       string `json:"name"`
	Version    string `json:"version"`
	Repository string `json:"repository,omitempty"`
	Homepage   string `json:"homepage,omitempty"`
}

// Services are the third-party services a node connects to: none.
type Services struct {
	Inbound  []string `json:"inbound"`
	Outbound []string `json:"outbound"`
}

// Usage counts a node's users and posts.
type Usage struct {
	Users      UserCounts `json:"users"`
	LocalPosts int        `json:"localPosts"`
}

// UserCounts counts a node's users.
type UserCounts struct {
	Total          int `json:"total"`
	ActiveMonth    int `json:"activeMonth"`
	ActiveHalfyear int `json:"activeHalfyear"`
}

// NodeInfoDiscovery answers /.well-known/nodeinfo with links to both
// schema versions.
func (h Handlers) NodeInfoDiscovery(w http.ResponseWriter, r *http.Request) {
	o, ok := h.origin(w, r)
	if !ok {
		return
	}
	writeJSON(w, "application/json", struct {
		Links []apclient.Link `json:"links"`
	}{[]apclient.Link{
		{Rel: NodeInfo20, Href: "https://" + o.Host + "/nodeinfo/2.0"},
		{Rel: NodeInfo21, Href: "https://" + o.Host + "/nodeinfo/2.1"},
	}})
}

// NodeInfo answers /nodeinfo/2.0 and /nodeinfo/2.1 (the version is the
// last path segment), with software "crowd" at h.Version.
func (h Handlers) NodeInfo(version string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o, ok := h.origin(w, r)
		if !ok {
			return
		}
		doc := NodeInfoDoc{
			Version:   version,
			Software:  Software{Name: "crowd", Version: h.Version},
			Protocols: []string{"activitypub"},
			Services:  Services{Inbound: []string{}, Outbound: []string{}},
			Usage: Usage{Users: UserCounts{Total: o.NumActors(), ActiveMonth: o.NumActors(),
				ActiveHalfyear: o.NumActors()}},
			Metadata: map[string]any{"nodeName": o.Host, "crowd": true},
		}
		schema := NodeInfo20
		if version == "2.1" {
			schema = NodeInfo21
			doc.Software.Repository = "https://github.com/crowdfed/crowd"
			doc.Software.Homepage = "https://github.com/crowdfed/crowd"
		}
		writeJSON(w, `application/json; profile="`+schema+`#"`, doc)
	}
}
