package inbox

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/adminapi"
)

// maxBatchBody bounds a batch request's body: an item is a few ids of a
// few hundred bytes, so 8 MiB holds the most items a request may carry.
const maxBatchBody = 8 << 20

// recordBatch converts items with conv and hands them to record, all of
// them or, when one is bad, none: more than most items, or an item record
// refuses with bad, is ErrBadRequest naming it. It answers how many were
// recorded.
func recordBatch[In, Out any](items []In, most int, conv func(In) Out, record func([]Out) error, bad error) (int, error) {
	if len(items) > most {
		return 0, fmt.Errorf("%w: %d items, at most %d a request", ErrBadRequest, len(items), most)
	}
	out := make([]Out, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	if err := record(out); err != nil {
		if errors.Is(err, bad) {
			err = fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
		return 0, err
	}
	return len(out), nil
}

// serveBatch decodes a batch request of at most maxBatchBody, refusing one
// that is not JSON of the shape named (400), and answers take's result.
func serveBatch[Req, Res any](w http.ResponseWriter, r *http.Request, shape string, take func(Req) (Res, error)) {
	var req Req
	if err := adminapi.DecodeBody(w, r, maxBatchBody, &req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON %s: %w", ErrBadRequest, shape, err))
		return
	}
	res, err := take(req)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, res)
}
