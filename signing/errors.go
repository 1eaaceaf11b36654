package signing

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// these with %w and adds a human-readable reason after a colon, so a handler can
// pick a status code with errors.Is and still tell the sender what was wrong.
var (
	// ErrNoSignature: the request carries no Signature (or Authorization:
	// Signature) header at all.
	ErrNoSignature = errors.New("signing: no signature")
	// ErrMalformedSignature: a signature header is present but cannot be
	// parsed, lacks a required parameter, or does not cover what it must.
	ErrMalformedSignature = errors.New("signing: malformed signature")
	// ErrDigestMismatch: the Digest (or Content-Digest) header is missing,
	// unparsable, unsupported, or does not match the body.
	ErrDigestMismatch = errors.New("signing: digest mismatch")
	// ErrDateSkew: the Date header or created/expires parameters fall outside
	// the accepted window.
	ErrDateSkew = errors.New("signing: date outside the accepted window")
	// ErrKeyUnavailable: the keyId could not be resolved to a usable public
	// key (fetch failed, 404, no matching key in the document, bad PEM, ...).
	ErrKeyUnavailable = errors.New("signing: key unavailable")
	// ErrBadSignature: the signature does not verify with the key, even after
	// refetching the key once.
	ErrBadSignature = errors.New("signing: bad signature")
	// ErrUnsupportedAlgorithm: the algorithm named by the signature (or needed
	// by a key) is not one this package signs or verifies.
	ErrUnsupportedAlgorithm = errors.New("signing: unsupported algorithm")
	// ErrRFC9421: the request uses RFC 9421 HTTP Message Signatures
	// (Signature-Input) and could not be verified as such. An inbox answers 401
	// so that the sender falls back to draft-cavage.
	ErrRFC9421 = errors.New("signing: RFC 9421 signature rejected")
)
