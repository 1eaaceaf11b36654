package signing

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
)

// Digest returns the Digest header value for body: "SHA-256=" followed by the
// standard base64 of the SHA-256 of the exact bytes.
func Digest(body []byte) string {
	sum := sha256.Sum256(body)
	return "SHA-256=" + base64.StdEncoding.EncodeToString(sum[:])
}

// DigestValue is one element of a Digest header (RFC 3230 instance digest).
type DigestValue struct {
	// Algorithm is upper-cased, e.g. "SHA-256".
	Algorithm string
	// Value is the encoded digest as sent (base64 for SHA-256/SHA-512).
	Value string
}

// ParseDigest parses a Digest header: comma-separated algorithm=value pairs.
// Algorithm names are case-insensitive (returned upper-cased); empty elements
// are skipped; at least one element is required. It does not decode values, so
// unknown algorithms (MD5, UNIXsum, ...) parse fine. Errors wrap
// ErrDigestMismatch.
func ParseDigest(h string) ([]DigestValue, error) {
	var out []DigestValue
	for part := range strings.SplitSeq(h, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		alg, val, ok := strings.Cut(part, "=")
		alg, val = strings.TrimSpace(alg), strings.TrimSpace(val)
		if !ok || alg == "" || val == "" {
			return nil, fmt.Errorf("%w: Digest element %q is not algorithm=value", ErrDigestMismatch, part)
		}
		for i := 0; i < len(alg); i++ {
			if !isTokenChar(alg[i]) {
				return nil, fmt.Errorf("%w: Digest algorithm %q is not a token", ErrDigestMismatch, alg)
			}
		}
		out = append(out, DigestValue{Algorithm: strings.ToUpper(alg), Value: val})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty Digest header", ErrDigestMismatch)
	}
	return out, nil
}

// VerifyDigest checks a Digest header against body. SHA-256 and SHA-512 are
// understood; other algorithms are ignored, but at least one understood
// algorithm must be present and every understood one must match. Errors wrap
// ErrDigestMismatch and say which algorithm failed and what the body hashes to.
func VerifyDigest(header string, body []byte) error {
	vals, err := ParseDigest(header)
	if err != nil {
		return err
	}
	checked := 0
	for _, v := range vals {
		var sum []byte
		switch v.Algorithm {
		case "SHA-256":
			s := sha256.Sum256(body)
			sum = s[:]
		case "SHA-512":
			s := sha512.Sum512(body)
			sum = s[:]
		default:
			continue
		}
		checked++
		got, err := decodeBase64(v.Value)
		if err != nil {
			return fmt.Errorf("%w: %s value %q is not base64", ErrDigestMismatch, v.Algorithm, v.Value)
		}
		if subtle.ConstantTimeCompare(got, sum) != 1 {
			return fmt.Errorf("%w: body %s is %s, Digest header says %s", ErrDigestMismatch,
				v.Algorithm, base64.StdEncoding.EncodeToString(sum), v.Value)
		}
	}
	if checked == 0 {
		return fmt.Errorf("%w: Digest %q has no SHA-256 or SHA-512 value", ErrDigestMismatch, header)
	}
	return nil
}
