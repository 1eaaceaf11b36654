package pasture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/crowdfed/crowd/adminapi"
)

// Fetchbacks is the crowd's fetch-back windows: a run in this process (a
// standalone flood) opens its window here directly; others go through the
// admin API's fetch-back routes.
func (p *Pasture) Fetchbacks() *FetchWindows { return p.fetch }

// handleFetchbacks adds the fetch-back routes to the admin router.
func (p *Pasture) handleFetchbacks(handle func(pattern string, h http.Handler)) {
	f := p.fetch
	handle(string(adminapi.RouteFetchbackOpen), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req adminapi.FetchbackOpenRequest
		if err := decodeAdminBody(r, &req); err != nil {
			refuseAdmin(w, http.StatusBadRequest, err.Error())
			return
		}
		win, err := f.Open(req.Label)
		if err != nil {
			refuseAdmin(w, http.StatusConflict, err.Error())
			return
		}
		writeAdminJSON(w, win)
	}))
	byRef := func(op func(string) (adminapi.FetchbackTally, bool)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ref adminapi.FetchbackRef
			if err := decodeAdminBody(r, &ref); err != nil || ref.ID == "" {
				refuseAdmin(w, http.StatusBadRequest, `want {"id": "<the id the window was opened with>"}`)
				return
			}
			t, ok := op(ref.ID)
			if !ok {
				refuseAdmin(w, http.StatusNotFound, fmt.Sprintf("no fetch-back window %q is open", ref.ID))
				return
			}
			writeAdminJSON(w, t)
		})
	}
	handle(string(adminapi.RouteFetchbackEnd), byRef(f.End))
	handle(string(adminapi.RouteFetchbackClose), byRef(f.Close))
	handle(string(adminapi.RouteFetchbacks), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get(adminapi.ParamID)
		ts := f.Tallies(id)
		if id != "" && len(ts) == 0 {
			refuseAdmin(w, http.StatusNotFound, fmt.Sprintf("no fetch-back window %q is open", id))
			return
		}
		writeAdminJSON(w, ts)
	}))
}

// decodeAdminBody reads a JSON body of at most 64 KiB into v; an empty
// body leaves v as it is.
func decodeAdminBody(r *http.Request, v any) error {
	err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v)
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the body is not the route's JSON: %v", err)
	}
	return nil
}
