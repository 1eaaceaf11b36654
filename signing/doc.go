// Package signing signs and verifies ActivityPub HTTP requests.
//
// Outgoing requests are signed with draft-cavage HTTP signatures, built here
// rather than with go-fed/httpsig so that one Signer serves every goroutine:
// POSTs cover "(request-target) host date digest content-type" and carry
// Digest: SHA-256=…; GETs cover "(request-target) host date accept". The
// default label is rsa-sha256, which every fediverse verifier accepts; hs2019,
// rsa-sha512 and ed25519 are options. The private-key operation sits behind
// Key (a crypto.Signer), so a faster implementation can replace RSA.
//
// RSA key operations go through a Backend: Go's crypto/rsa (GoBackend), or
// OpenSSL 3's libcrypto through cgo (NewBackend("libcrypto"), only in a build
// with cgo). Backend.PrivateKey wraps a key into the Key that signs with it;
// the Verifier checks RSA signatures with its Backend. Both give the same
// bytes: PKCS#1 v1.5 is deterministic.
//
// The same Signer signs RFC 9421 HTTP Message Signatures (SignPost9421,
// SignGet9421, or Sign with a Scheme) the way Fedify (>= 1.6) does: label
// sig1, components "@method" "@target-uri" "@authority" "host" "date" (and
// "content-digest", RFC 9530 sha-256, for a body), parameters alg
// (rsa-v1_5-sha256 or ed25519, by the key), keyid and created. Signing a
// request again with the other scheme (a double knock) replaces the first
// scheme's headers.
//
// Incoming requests are checked by Verifier: the cavage header is parsed once,
// by this package's parser (optional whitespace around ',' and '=' as
// Mastodon allows), the signing string rebuilt from it and checked with
// crypto/rsa or crypto/ed25519, the Digest against the body, Date, created
// and expires against the Verifier's own clock and window, and, for RFC 9421 senders
// (Signature-Input), a verifier of its own over fields parsed by httpsfv.
// Keys come from a KeyResolver, normally a KeyCache that fetches keyIds
// through a KeyFetcher (apclient's signed GET, wired by the composition
// root: signing imports no client of its own), caches them with a TTL in a bounded LRU (golang-lru; misses
// shared through singleflight), and refetches once when a signature fails
// (key rotation).
//
// # The inbox's RFC 9421 profile
//
// What Verifier accepts of an RFC 9421 request from a remote actor is what
// Mastodon requires of one (app/lib/signed_request.rb, HttpMessageSignature):
//
//   - one signature is checked: the first Signature-Input label with a
//     byte sequence in Signature;
//   - the keyid and created parameters are required; created (and
//     expires, when given) are judged by the Verifier's clock with
//     Mastodon's window: created at most Window (1 h) ahead, and now no
//     later than its expiry (expires, else created + 5 min, at most
//     created + 12 h) plus Window;
//   - @method and @target-uri must be covered, and content-digest on a
//     POST or any request with a body; Content-Digest must carry sha-256
//     (Mastodon supports no other) matching the body, and a sha-512 beside
//     it must match too;
//   - algorithms: rsa-v1_5-sha256 with an RSA key (Mastodon's only RSA
//     algorithm), ed25519 with an Ed25519 key (Mastodon's Ed25519 keys),
//     and rsa-pss-sha512 with an RSA key when alg names it (Fedify
//     verifies it; Mastodon does not). With no alg, the key decides
//     (rsa-v1_5-sha256 or ed25519). ECDSA and HMAC keys, which fediverse
//     actors do not publish, are refused;
//   - other components it can rebuild: @authority, @scheme,
//     @request-target, @path, @query, @query-param;name="…" and header
//     fields; other component parameters (sf, key, bs, req, tr) are
//     refused.
//
// A refusal wraps ErrRFC9421, so the inbox answers 401 and a double-knocking
// sender falls back to draft-cavage. RFC 9421's own examples (Appendix B.2)
// cover neither @method nor @target-uri, so the profile refuses all of them;
// below the profile, the algorithm check verifies each of them
// cryptographically, with every algorithm of RFC 9421 §3.3 (see
// testdata/README.md).
//
// Errors wrap the Err* sentinels with %w and carry a reason for the 401 body.
package signing
