package signing

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mr-tron/base58"
)

// PublicKey is a resolved verification key.
type PublicKey struct {
	// Key is *rsa.PublicKey or ed25519.PublicKey.
	Key crypto.PublicKey
	// Owner is the actor the key belongs to (publicKey.owner, or the
	// Multikey controller). The inbox checks it equals the activity's actor.
	Owner string
	// ID is the key's id (normally equal to the keyId that was resolved).
	ID string
}

// KeyResolver resolves a keyId to a public key. refresh asks the resolver to
// bypass its cache (the verifier sets it once, after a signature failed with
// the cached key, to follow key rotation). Errors should wrap ErrKeyUnavailable.
type KeyResolver interface {
	ResolveKey(ctx context.Context, keyID string, refresh bool) (PublicKey, error)
}

// KeyResolverFunc adapts a function to KeyResolver (handy for composing the
// crowd's own keys with a KeyCache, and for tests).
type KeyResolverFunc func(ctx context.Context, keyID string, refresh bool) (PublicKey, error)

// ResolveKey calls f.
func (f KeyResolverFunc) ResolveKey(ctx context.Context, keyID string, refresh bool) (PublicKey, error) {
	return f(ctx, keyID, refresh)
}

// ParsePublicKeyPEM parses a publicKeyPem value: a PKIX "PUBLIC KEY" (RSA,
// Ed25519, or ECDSA on P-256 or P-384) or a PKCS#1 "RSA PUBLIC KEY" block.
// Both encodings are tried whatever the label says, because mislabelled
// PEMs exist in the wild. The result is *rsa.PublicKey, ed25519.PublicKey
// or *ecdsa.PublicKey; anything else (another curve, DSA, ...) is an error
// wrapping ErrUnsupportedAlgorithm. Which of them a verifier accepts from
// a remote actor is its own profile (see doc.go).
func ParsePublicKeyPEM(s string) (crypto.PublicKey, error) {
	// Some servers double-escape newlines in JSON; undo that before decoding.
	if !strings.Contains(s, "\n") && strings.Contains(s, `\n`) {
		s = strings.ReplaceAll(s, `\n`, "\n")
	}
	block, _ := pem.Decode([]byte(s))
	if block == nil {
		return nil, fmt.Errorf("%w: publicKeyPem has no PEM block", ErrKeyUnavailable)
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		switch k := k.(type) {
		case *rsa.PublicKey, ed25519.PublicKey:
			return k, nil
		case *ecdsa.PublicKey:
			if k.Curve == elliptic.P256() || k.Curve == elliptic.P384() {
				return k, nil // RFC 9421's ecdsa-p256-sha256 and ecdsa-p384-sha384
			}
			return nil, fmt.Errorf("%w: ECDSA curve %s (want P-256 or P-384)", ErrUnsupportedAlgorithm, k.Curve.Params().Name)
		default:
			return nil, fmt.Errorf("%w: public key type %T (want RSA, Ed25519 or ECDSA)", ErrUnsupportedAlgorithm, k)
		}
	}
	if k, err := x509.ParsePKCS1PublicKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, fmt.Errorf("%w: cannot parse %q PEM block as PKIX or PKCS#1", ErrKeyUnavailable, block.Type)
}

// keyNode is the part of a JSON-LD document that can describe a key: an
// actor (with publicKey / assertionMethod), a CryptographicKey or a Multikey.
type keyNode struct {
	ID                 string          `json:"id"`
	Type               json.RawMessage `json:"type"`
	Owner              string          `json:"owner"`
	Controller         string          `json:"controller"`
	PublicKeyPem       string          `json:"publicKeyPem"`
	PublicKeyMultibase string          `json:"publicKeyMultibase"`
	PublicKey          json.RawMessage `json:"publicKey"`
	AssertionMethod    json.RawMessage `json:"assertionMethod"`
	// AdditionalPublicKeys is Misskey's list of extra keys (e.g. Ed25519).
	AdditionalPublicKeys json.RawMessage `json:"additionalPublicKeys"`
}

// isKey reports whether n itself carries key material.
func (n *keyNode) isKey() bool { return n.PublicKeyPem != "" || n.PublicKeyMultibase != "" }

// material parses n's key material.
func (n *keyNode) material() (crypto.PublicKey, error) {
	if n.PublicKeyPem != "" {
		return ParsePublicKeyPEM(n.PublicKeyPem)
	}
	return parseMultibaseKey(n.PublicKeyMultibase)
}

// owner is publicKey.owner, or a Multikey's controller.
func (n *keyNode) owner() string {
	if n.Owner != "" {
		return n.Owner
	}
	return n.Controller
}

// embeddedKeys returns the key objects listed under publicKey,
// assertionMethod and additionalPublicKeys (each an object or an array; bare
// IRIs are skipped).
func (n *keyNode) embeddedKeys() []keyNode {
	var out []keyNode
	for _, raw := range []json.RawMessage{n.PublicKey, n.AssertionMethod, n.AdditionalPublicKeys} {
		raw = json.RawMessage(strings.TrimSpace(string(raw)))
		if len(raw) == 0 {
			continue
		}
		switch raw[0] {
		case '{':
			var k keyNode
			if json.Unmarshal(raw, &k) == nil && k.isKey() {
				out = append(out, k)
			}
		case '[':
			var arr []json.RawMessage
			if json.Unmarshal(raw, &arr) != nil {
				continue
			}
			for _, el := range arr {
				var k keyNode
				if json.Unmarshal(el, &k) == nil && k.isKey() {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

// errStandalone signals a standalone key document whose owner is on another
// origin; the cache then confirms it against the owner's actor document.
var errStandalone = errors.New("standalone key with foreign owner")

// keyFromDocument finds keyID in a fetched document. An actor document must
// embed a key whose id is keyID (or, when keyID is the actor id itself, exactly
// one key); the key's owner must be the actor. A standalone key document must
// have id keyID and an owner. The document's id must be on keyID's host. When a
// standalone key names an owner on another host, it returns the key together
// with errStandalone so that the caller can confirm the owner lists it.
func keyFromDocument(body []byte, keyID string) (PublicKey, error) {
	var doc keyNode
	if err := json.Unmarshal(body, &doc); err != nil {
		return PublicKey{}, fmt.Errorf("%w: %s is not a JSON object: %v", ErrKeyUnavailable, stripFragment(keyID), err)
	}
	if doc.ID == "" {
		return PublicKey{}, fmt.Errorf("%w: document for %s has no id", ErrKeyUnavailable, keyID)
	}
	if !sameHost(doc.ID, keyID) {
		return PublicKey{}, fmt.Errorf("%w: document id %s is not on the host of keyId %s", ErrKeyUnavailable, doc.ID, keyID)
	}
	if doc.isKey() {
		if doc.ID != keyID {
			return PublicKey{}, fmt.Errorf("%w: key document id %s is not keyId %s", ErrKeyUnavailable, doc.ID, keyID)
		}
		owner := doc.owner()
		if owner == "" {
			return PublicKey{}, fmt.Errorf("%w: key document %s has no owner", ErrKeyUnavailable, keyID)
		}
		k, err := doc.material()
		if err != nil {
			return PublicKey{}, fmt.Errorf("key %s: %w", keyID, err)
		}
		pk := PublicKey{Key: k, Owner: owner, ID: doc.ID}
		if !sameHost(owner, keyID) {
			return pk, errStandalone
		}
		return pk, nil
	}
	return findEmbeddedKey(&doc, keyID)
}

// findEmbeddedKey picks keyID out of an actor document's keys and checks that
// the key's owner is the actor.
func findEmbeddedKey(doc *keyNode, keyID string) (PublicKey, error) {
	keys := doc.embeddedKeys()
	var pick *keyNode
	for i := range keys {
		if keys[i].ID == keyID {
			pick = &keys[i]
			break
		}
	}
	if pick == nil && keyID == doc.ID && len(keys) == 1 {
		pick = &keys[0] // keyId names the actor itself and there is one key
	}
	if pick == nil {
		ids := make([]string, len(keys))
		for i, k := range keys {
			ids[i] = k.ID
		}
		return PublicKey{}, fmt.Errorf("%w: actor %s has no key with id %s (has %q)", ErrKeyUnavailable, doc.ID, keyID, ids)
	}
	owner := pick.owner()
	if owner == "" {
		owner = doc.ID
	}
	if owner != doc.ID {
		return PublicKey{}, fmt.Errorf("%w: key %s names owner %s but is embedded in actor %s", ErrKeyUnavailable, keyID, owner, doc.ID)
	}
	k, err := pick.material()
	if err != nil {
		return PublicKey{}, fmt.Errorf("key %s: %w", keyID, err)
	}
	id := pick.ID
	if id == "" {
		id = keyID
	}
	return PublicKey{Key: k, Owner: owner, ID: id}, nil
}

// stripFragment removes a #fragment: the document to fetch for a keyId.
func stripFragment(s string) string {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		return s[:i]
	}
	return s
}

// sameHost compares the hosts (with port) of two absolute URLs, case-insensitively.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}

// equalKeys compares two public keys.
func equalKeys(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	e, ok := a.(equaler)
	return ok && e.Equal(b)
}

// parseMultibaseKey decodes a Multikey publicKeyMultibase ("z" + base58btc of
// a multicodec-prefixed key): ed25519-pub (0xed 0x01) or rsa-pub (0x85 0x24,
// PKCS#1 DER), as FEP-521a actors publish them.
func parseMultibaseKey(s string) (crypto.PublicKey, error) {
	if len(s) < 2 || s[0] != 'z' {
		return nil, fmt.Errorf("%w: publicKeyMultibase is not base58btc ('z')", ErrKeyUnavailable)
	}
	if len(s) > 2048 {
		// Decoding is quadratic in the length; a key is a few hundred bytes.
		return nil, fmt.Errorf("%w: publicKeyMultibase is %d bytes long", ErrKeyUnavailable, len(s))
	}
	raw, err := base58.Decode(s[1:])
	if err != nil {
		return nil, fmt.Errorf("%w: publicKeyMultibase: %v", ErrKeyUnavailable, err)
	}
	switch {
	case len(raw) == 2+ed25519.PublicKeySize && raw[0] == 0xed && raw[1] == 0x01:
		return ed25519.PublicKey(raw[2:]), nil
	case len(raw) > 2 && raw[0] == 0x85 && raw[1] == 0x24:
		k, err := x509.ParsePKCS1PublicKey(raw[2:])
		if err != nil {
			return nil, fmt.Errorf("%w: multikey RSA: %v", ErrKeyUnavailable, err)
		}
		return k, nil
	}
	return nil, fmt.Errorf("%w: unsupported multikey codec", ErrUnsupportedAlgorithm)
}
