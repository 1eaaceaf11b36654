package pasture

import (
	"fmt"
	"html"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/crowdfed/crowd/actors"
)

// gone answers 410 Gone with the Tombstone of a deleted object (a note,
// what hangs off it, or a deleted leaver and anything under it) and
// reports whether it did.
func (d documents) gone(w http.ResponseWriter, r *http.Request, a *actors.Actor, path string) bool {
	t, gone := d.world.Gone(a, path)
	if !gone {
		return false
	}
	b, err := actors.MarshalDoc(t)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return true
	}
	w.Header().Set("Content-Type", apContentType(r))
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(http.StatusGone)
	w.Write(b)
	return true
}

// media answers the image a note's attachment names
// (/media/{W}x{H}/{seed}.png), generated from its path: the same bytes
// for the same path, on every origin.
func (d documents) media(w http.ResponseWriter, r *http.Request) {
	wd, ht, seed, err := actors.ParseMediaPath(r.URL.Path)
	if err != nil {
		http.Error(w, fmt.Sprintf("no image at %s: %v", r.URL.Path, err), http.StatusNotFound)
		return
	}
	b, err := d.images.PNG(wd, ht, seed)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "image/png")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	w.Write(b)
}

// tag answers the page a Hashtag's href names: a small HTML page, as
// Mastodon's /tags/NAME is one.
func (d documents) tag(w http.ResponseWriter, r *http.Request) {
	o := originOf(r)
	name := html.EscapeString(strings.ToLower(chi.URLParam(r, "tag")))
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>#%s on %s</title></head><body>\n<h1>#%s</h1>\n<p>Posts of the crowd tagged #%s.</p>\n</body></html>\n",
		name, o.Host, name, name)
}
