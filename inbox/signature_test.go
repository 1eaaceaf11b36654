package inbox

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/signing"
)

// TestSignatureHeaderInterop: requests signed as real senders sign them reach
// the inbox through its handler; the Signature header's spacing and a
// (created) slightly ahead are the sender's business, as they are for
// Mastodon. The signature is built here by hand, independently of the
// crowd's signer, which writes neither form.
func TestSignatureHeaderInterop(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, false, func(c *Config) { c.Now = func() time.Time { return now } })
	like := likeJSON(remoteID("bob"))
	const posted = "(request-target) host date digest content-type"
	const created = "(request-target) host (created) digest"

	tests := []struct {
		name    string
		headers string        // the signed headers
		created time.Duration // created parameter relative to now; 0: none
		alg     string
		format  string // the Signature header with {key}, {alg}, {headers}, {sig}, {created} filled in
		status  int
	}{
		// What the crowd itself sends: no spaces at all.
		{"no spaces", posted, 0, "rsa-sha256",
			`keyId="{key}",algorithm="{alg}",headers="{headers}",signature="{sig}"`, http.StatusAccepted},
		// A space after each comma (RFC 9110 list style; go-fed's parser refused it).
		{"comma space", posted, 0, "rsa-sha256",
			`keyId="{key}", algorithm="{alg}", headers="{headers}", signature="{sig}"`, http.StatusAccepted},
		// Spaces on both sides of each comma.
		{"space comma space", posted, 0, "rsa-sha256",
			`keyId="{key}" , algorithm="{alg}" , headers="{headers}" , signature="{sig}"`, http.StatusAccepted},
		// Spaces around '=' (Mastodon's parser allows \s*=\s*).
		{"spaces around equals", posted, 0, "rsa-sha256",
			`keyId = "{key}",algorithm= "{alg}",headers ="{headers}",signature = "{sig}"`, http.StatusAccepted},
		// Tabs and a mix of both, still optional whitespace.
		{"tabs", posted, 0, "rsa-sha256",
			"keyId=\"{key}\",\talgorithm\t=\"{alg}\" ,\theaders=\"{headers}\",signature=\"{sig}\"", http.StatusAccepted},
		// hs2019 with (created) 30 s ahead of the inbox's clock: inside the ±1 h window.
		{"created 30 s ahead", created, 30 * time.Second, "hs2019",
			`keyId="{key}", algorithm="{alg}", created={created}, headers="{headers}", signature="{sig}"`, http.StatusAccepted},
		// (created) 59 minutes old: still inside the window.
		{"created 59 min old", created, -59 * time.Minute, "hs2019",
			`keyId="{key}",algorithm="{alg}",created={created},headers="{headers}",signature="{sig}"`, http.StatusAccepted},
		// (created) 2 h ahead: outside the window, refused by the crowd's clock.
		{"created 2 h ahead", created, 2 * time.Hour, "hs2019",
			`keyId="{key}", algorithm="{alg}", created={created}, headers="{headers}", signature="{sig}"`, http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/users/alice/inbox", bytes.NewReader(like))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = "flood1.test"
			req.Header.Set("Date", now.Format(http.TimeFormat))
			req.Header.Set("Digest", signing.Digest(like))
			req.Header.Set("Content-Type", "application/activity+json")
			var createdParam string
			if tc.created != 0 {
				createdParam = strconv.FormatInt(now.Add(tc.created).Unix(), 10)
			}
			// The draft-cavage signing string, one "name: value" line per signed header.
			var lines []string
			for _, h := range strings.Fields(tc.headers) {
				var v string
				switch h {
				case "(request-target)":
					v = "post /users/alice/inbox"
				case "host":
					v = req.Host
				case "(created)":
					v = createdParam
				default:
					v = req.Header.Get(h)
				}
				lines = append(lines, h+": "+v)
			}
			sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
			sig, err := rsa.SignPKCS1v15(rand.Reader, f.remote.keys["bob"], crypto.SHA256, sum[:])
			if err != nil {
				t.Fatal(err)
			}
			hdr := strings.NewReplacer("{key}", remoteKeyID("bob"), "{alg}", tc.alg, "{headers}", tc.headers,
				"{sig}", base64.StdEncoding.EncodeToString(sig), "{created}", createdParam).Replace(tc.format)
			req.Header.Set("Signature", hdr)
			if status, body := f.do(req); status != tc.status {
				t.Fatalf("status %d (%s), want %d\nSignature: %s", status, body, tc.status, hdr)
			}
		})
	}
}
