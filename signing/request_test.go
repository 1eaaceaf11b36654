package signing

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// ParseRequest is the one read of a request's signature header: where it looks, and what a
// handler gets when there is nothing usable.
func TestParseRequest(t *testing.T) {
	const sig = `keyId="https://a.test/users/a#main-key",algorithm="rsa-sha256",headers="date",signature="c2ln"`
	tests := []struct {
		name    string
		headers map[string]string
		keyID   string
		err     error
	}{
		// The usual header.
		{"Signature", map[string]string{"Signature": sig}, "https://a.test/users/a#main-key", nil},
		// The older form, scheme matched without case.
		{"Authorization: Signature", map[string]string{"Authorization": "signature " + sig}, "https://a.test/users/a#main-key", nil},
		// Signature wins over Authorization, as servers read it.
		{"both", map[string]string{"Signature": sig, "Authorization": `Signature keyId="other",signature="c2ln"`}, "https://a.test/users/a#main-key", nil},
		// Another Authorization scheme is no signature.
		{"Authorization: Bearer", map[string]string{"Authorization": "Bearer x"}, "", ErrNoSignature},
		{"none", nil, "", ErrNoSignature},
		// A header that does not parse names no keyId.
		{"malformed", map[string]string{"Signature": `keyId="k"`}, "", ErrMalformedSignature},
		// RFC 9421 is the verifier's whole; its Signature is not a cavage one.
		{"RFC 9421", map[string]string{"Signature-Input": `sig1=("@method");keyid="k"`, "Signature": "sig1=:c2ln:"}, "", ErrRFC9421},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got := ParseRequest(h)
			if got.KeyID() != tc.keyID {
				t.Errorf("KeyID %q, want %q", got.KeyID(), tc.keyID)
			}
			if (tc.err == nil) != (got.Err == nil) || tc.err != nil && !errors.Is(got.Err, tc.err) {
				t.Errorf("Err %v, want %v", got.Err, tc.err)
			}
		})
	}
}

// VerifyParsed checks the parsed value it is handed and does not read the header again: a
// request whose header was parsed before it was spoiled still verifies, and Verify, which
// parses, refuses it.
func TestVerifyParsedUsesTheParse(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s := NewSigner(SignerOptions{Now: func() time.Time { return now }})
	req, _ := http.NewRequest(http.MethodPost, inbox, nil)
	if err := s.SignPost(req, testBody, keyA, k.rsaA); err != nil {
		t.Fatal(err)
	}
	req = overTheWire(t, req)
	v := &Verifier{Keys: &fakeResolver{keys: map[string]PublicKey{keyA: {Key: k.rsaA.Public(), Owner: ownA, ID: keyA}}}, Now: func() time.Time { return now }}
	sig := ParseRequest(req.Header)
	req.Header.Set("Signature", "spoiled")
	if _, err := v.VerifyParsed(context.Background(), req, testBody, sig); err != nil {
		t.Fatalf("VerifyParsed: %v", err)
	}
	if _, err := v.Verify(context.Background(), req, testBody); !errors.Is(err, ErrMalformedSignature) {
		t.Fatalf("Verify of the spoiled header: %v, want ErrMalformedSignature", err)
	}
}
