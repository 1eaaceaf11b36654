package apclient

import (
	"fmt"
	"net/http"

	"github.com/crowdfed/crowd/signing"
)

// Identity is the actor a GET is signed as: its keyId and private key.
// The zero Identity signs nothing.
type Identity struct {
	KeyID string
	Key   signing.Key
}

// SignAs returns a Transport.As that signs every request as id.
func SignAs(id Identity) func(*http.Request) Identity {
	return func(*http.Request) Identity { return id }
}

// Transport is an http.RoundTripper that signs each GET (and HEAD) it
// carries as the actor As names, with the draft-cavage headers
// "(request-target) host date accept" that GoToSocial and Mastodon in
// authorized-fetch mode demand. Other methods pass through as they are: a
// POST's signature covers its Digest, which only its sender can write.
//
// Each request, redirects included, is signed afresh on a clone, so the
// signature always covers the request-target actually sent; the caller's
// request is left as it was, as http.RoundTripper requires.
type Transport struct {
	// Base sends the signed request; nil is http.DefaultTransport.
	Base http.RoundTripper
	// Signer writes the signature (required for signing).
	Signer *signing.Signer
	// As chooses the actor for a request (e.g. from its context); nil, or
	// a zero Identity, sends the request unsigned.
	As func(*http.Request) Identity
}

// RoundTrip signs req's clone and sends it through Base. A request that
// cannot be signed is not sent.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if t.As == nil || t.Signer == nil || (req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != "") {
		return base.RoundTrip(req)
	}
	id := t.As(req)
	if id.KeyID == "" {
		return base.RoundTrip(req)
	}
	signed := req.Clone(req.Context())
	if err := t.Signer.SignGet(signed, id.KeyID, id.Key); err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip owns the body, even on failure
		}
		return nil, fmt.Errorf("signing GET %s: %w", req.URL.Redacted(), err)
	}
	return base.RoundTrip(signed)
}
