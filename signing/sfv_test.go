package signing

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"
)

// TestMemberText: a member's text as sent, for the labels a verifier looks up.
func TestMemberText(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		key   string
		want  string
	}{
		// One member, the usual Signature-Input.
		{[]string{`sig1=("@method" "@path");created=1;keyid="k"`}, "sig1", `("@method" "@path");created=1;keyid="k"`},
		// A comma inside a string does not end the member.
		{[]string{`sig1=("@method");keyid="https://a.test/x,y", sig2=("@path")`}, "sig2", `("@path")`},
		// An escaped quote does not end the string.
		{[]string{`a=("x\",y"), b=?1`}, "a", `("x\",y")`},
		// Members spread over field lines, spaces around them.
		{[]string{`a=1 `, `  b=("@method"  "@path") `}, "b", `("@method"  "@path")`},
		// A repeated key: the last value, as the parsed dictionary has it.
		{[]string{`a=1, a=2`}, "a", `2`},
		// A display string has no escapes: its backslash ends nothing.
		{[]string{`d=%"\", e=("x")`}, "e", `("x")`},
		// No such member.
		{[]string{`a=1`}, "b", ``},
	} {
		if got := memberText(tc.lines, tc.key); got != tc.want {
			t.Errorf("memberText(%q, %q) = %q, want %q", tc.lines, tc.key, got, tc.want)
		}
	}
}

// FuzzMemberText: for any field httpsfv reads as a dictionary, each
// member's text as memberText finds it reads back as that same member.
func FuzzMemberText(f *testing.F) {
	f.Add(`sig1=("@method" "@target-uri" "content-digest");created=1748779200;keyid="https://x.test/a#k";alg="rsa-v1_5-sha256"`)
	f.Add(`sig1=:AAAA:, sig2=?1;a=-1.5;b=tok/en:x`)
	f.Add(`a=("\"\\,"), b, c=(1 2);x, a=%"%22,"`)
	f.Add(`d=%"\", e=("x,y")`)
	f.Fuzz(func(t *testing.T, field string) {
		d, err := httpsfv.UnmarshalDictionary([]string{field})
		if err != nil {
			return
		}
		for _, k := range d.Names() {
			m, _ := d.Get(k)
			if _, ok := m.(httpsfv.InnerList); !ok {
				continue // the verifier looks up inner lists only
			}
			one := httpsfv.NewDictionary()
			one.Add(k, m)
			want, err := httpsfv.Marshal(one)
			if err != nil {
				continue
			}
			text := memberText([]string{field}, k)
			again, err := httpsfv.UnmarshalDictionary([]string{k + "=" + text})
			if err != nil {
				t.Fatalf("member %s: text %q does not parse: %v", k, text, err)
			}
			if got, _ := httpsfv.Marshal(again); got != want {
				t.Fatalf("member %s: text %q reads as %s, httpsfv read %s", k, text, got, want)
			}
		}
	})
}

// TestRFC9421SignedAsSent: a sender that wrote its Signature-Input
// non-canonically (two spaces between components) and signed that text
// is verified, from the text as sent.
func TestRFC9421SignedAsSent(t *testing.T) {
	k := loadKeys(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	const kid = "https://sut.test/users/bob#ed-key"
	res := &fakeResolver{keys: map[string]PublicKey{kid: {Key: k.edA.Public(), Owner: "https://sut.test/users/bob", ID: kid}}}
	input := `("@method"  "@target-uri" "content-digest");created=` + itoa(now.Unix()) + `;keyid="` + kid + `"`
	r := httptest.NewRequest(http.MethodPost, "https://flood3.test/users/alice/inbox", strings.NewReader(string(testBody)))
	r.Header.Set("Content-Digest", "sha-256=:"+base64.StdEncoding.EncodeToString(sha256Sum(testBody))+":")
	r.Header.Set("Signature-Input", "sig1="+input)
	base, err := signatureBase(r, []string{"@method", "@target-uri", "content-digest"}, input)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Signature", "sig1=:"+base64.StdEncoding.EncodeToString(ed25519.Sign(k.edA, base))+":")
	v := &Verifier{Keys: res, Now: func() time.Time { return now }}
	if _, err := v.Verify(context.Background(), r, testBody); err != nil {
		t.Fatal(err)
	}
}
