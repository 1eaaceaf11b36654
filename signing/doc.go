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
// Errors wrap the Err* sentinels with %w and carry a reason for the 401 body.
package signing
