package fetchback

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/adminapi"
)

// Routes adds the admin API's fetch-back routes (open, end, close, list) with handle.
func (f *Windows) Routes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteFetchbackOpen), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req adminapi.FetchbackOpenRequest
		if err := decodeAdminBody(w, r, &req); err != nil {
			adminapi.WriteError(w, adminapi.BodyStatus(err), err.Error())
			return
		}
		win, err := f.Open(req.Label)
		if err != nil {
			adminapi.WriteError(w, http.StatusConflict, err.Error())
			return
		}
		adminapi.WriteJSON(w, http.StatusOK, win)
	}))
	byRef := func(op func(string) (adminapi.FetchbackTally, bool)) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var ref adminapi.FetchbackRef
			if err := decodeAdminBody(w, r, &ref); err != nil || ref.ID == "" {
				status := http.StatusBadRequest
				if err != nil {
					status = adminapi.BodyStatus(err)
				}
				adminapi.WriteError(w, status, `want {"id": "<the id the window was opened with>"}`)
				return
			}
			t, ok := op(ref.ID)
			if !ok {
				adminapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("no fetch-back window %q is open", ref.ID))
				return
			}
			adminapi.WriteJSON(w, http.StatusOK, t)
		})
	}
	handle(string(adminapi.RouteFetchbackEnd), byRef(f.End))
	handle(string(adminapi.RouteFetchbackClose), byRef(f.Close))
	handle(string(adminapi.RouteFetchbacks), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get(adminapi.ParamID)
		ts := f.Tallies(id)
		if id != "" && len(ts) == 0 {
			adminapi.WriteError(w, http.StatusNotFound, fmt.Sprintf("no fetch-back window %q is open", id))
			return
		}
		adminapi.WriteJSON(w, http.StatusOK, ts)
	}))
}

// decodeAdminBody reads a route's JSON body into v; no body leaves v as it is (every field
// of the fetch-back routes' bodies has a meaning when absent).
func decodeAdminBody(w http.ResponseWriter, r *http.Request, v any) error {
	err := adminapi.DecodeBody(w, r, 0, v)
	if err != nil && !errors.Is(err, adminapi.ErrEmptyBody) {
		return fmt.Errorf("the body is not the route's JSON: %w", err)
	}
	return nil
}
