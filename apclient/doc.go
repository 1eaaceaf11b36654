// Package apclient is the crowd's one ActivityPub HTTP client: every
// document the crowd fetches from another server (an actor, a key, a
// collection, a WebFinger answer) comes through a Fetcher.
//
// A Fetcher is an http.Client built in three layers: the caller's transport
// (dial guard, trusted roots), a signing Transport that signs each GET as an
// actor (draft-cavage, "(request-target) host date accept", with signing's
// Signer), and a redirect policy (SameHost) that refuses a redirect to another
// host before any request leaves for it. Every answer's body is bounded
// (ErrTooLarge), its status must be 200 (a *StatusError wrapping ErrStatus)
// and its Content-Type one that was asked for (ErrContentType).
//
// It sits between its users (flood, inbox, the audience) and signing, and
// imports nothing else of the crowd: signing's KeyCache fetches through the
// KeyFetcher a Fetcher implements, wired by the composition roots, so that
// the knot signing -> apclient -> signing never forms.
package apclient
