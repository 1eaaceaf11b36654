package signing

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Tamper is a kind of forged request: one a correct verifier must refuse
// (see SignForged). Its string is the name `--tamper` takes and the record
// counts it under.
type Tamper string

// The tamper kinds.
const (
	// TamperBody changes the body after signing; the Digest stays the
	// signed body's. Only a verifier that hashes the body itself refuses
	// it (go-fed/httpsig, for one, never looks at the body).
	TamperBody Tamper = "body"
	// TamperDigestUnsigned carries a correct Digest but leaves it out of
	// the signed headers, so the signature does not bind the body.
	TamperDigestUnsigned Tamper = "digest-unsigned"
	// TamperWrongKey is signed by a key whose owner is not the activity's
	// actor (another crowd actor's).
	TamperWrongKey Tamper = "wrong-key"
	// TamperDate is signed over a Date ForgedAge old.
	TamperDate Tamper = "date"
	// TamperCreated signs (created) ForgedAge ago beside a fresh Date
	// (hs2019, the only label (created) goes with): a verifier that checks
	// the Date alone accepts it.
	TamperCreated Tamper = "created"
	// TamperTarget signs the (request-target) of another inbox on the same
	// host than the one it is posted to.
	TamperTarget Tamper = "target"
	// TamperReplay sends again, byte for byte, a request the target
	// accepted earlier (the same activity id, within the Date window).
	TamperReplay Tamper = "replay"
	// TamperUnknownKey names a keyId that answers 404.
	TamperUnknownKey Tamper = "unknown-key"
)

// ForgedAge is how far from now TamperDate and TamperCreated put their
// times: a day, far outside the hour Fedify and Mastodon allow (and the
// crowd's own verifier), so no clock skew makes a forgery pass.
const ForgedAge = 24 * time.Hour

// Tampers lists every tamper kind, in the order reports show them.
func Tampers() []Tamper {
	return []Tamper{TamperBody, TamperDigestUnsigned, TamperWrongKey, TamperDate, TamperCreated,
		TamperTarget, TamperReplay, TamperUnknownKey}
}

// ErrTamper is wrapped by the errors of ParseTampers.
var ErrTamper = errors.New("signing: unknown tamper kind")

// ParseTampers reads a comma-separated list of tamper kinds (any case;
// "all" is every kind), each once, in the order Tampers lists them. An
// empty list is none.
func ParseTampers(s string) ([]Tamper, error) {
	want := map[Tamper]bool{}
	for f := range strings.SplitSeq(s, ",") {
		k := Tamper(strings.ToLower(strings.TrimSpace(f)))
		switch {
		case k == "":
			continue
		case k == "all":
			for _, t := range Tampers() {
				want[t] = true
			}
		case slices.Contains(Tampers(), k):
			want[k] = true
		default:
			return nil, fmt.Errorf("%w %q: want all or some of %s", ErrTamper, f, TamperNames())
		}
	}
	var out []Tamper
	for _, t := range Tampers() {
		if want[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// TamperNames is the kinds, comma-separated, for messages.
func TamperNames() string {
	var names []string
	for _, t := range Tampers() {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// Forgery says how SignForged forges a request.
type Forgery struct {
	// Kind is the tamper kind.
	Kind Tamper
	// WrongKeyID and WrongKey sign a TamperWrongKey request: a key whose
	// owner is not the activity's actor.
	WrongKeyID string
	WrongKey   Key
}

// SignForged signs req (a POST of body) as SignPost does, but forged as f
// says, and returns the body to send, which differs from body only for
// TamperBody. A TamperReplay request is signed as an honest one: the
// forgery is in sending it again. It never changes req.URL, so the request
// goes where it was meant to.
func (s *Signer) SignForged(req *http.Request, body []byte, keyID string, key Key, f Forgery) ([]byte, error) {
	switch f.Kind {
	case TamperBody:
		if err := s.SignPost(req, body, keyID, key); err != nil {
			return nil, err
		}
		return AlterBody(body), nil
	case TamperDigestUnsigned:
		return body, s.signPostWith(req, body, keyID, key, s.alg, "(request-target) host date content-type", 0)
	case TamperWrongKey:
		if f.WrongKey == nil || f.WrongKeyID == "" {
			return nil, fmt.Errorf("%w: a wrong-key forgery needs another key", ErrUnsupportedAlgorithm)
		}
		return body, s.SignPost(req, body, f.WrongKeyID, f.WrongKey)
	case TamperDate:
		if req.Header == nil {
			req.Header = make(http.Header, 8)
		}
		req.Header["Date"] = []string{s.now().Add(-ForgedAge).UTC().Format(http.TimeFormat)}
		return body, s.SignPost(req, body, keyID, key)
	case TamperCreated:
		created := s.now().Add(-ForgedAge).Unix()
		return body, s.signPostWith(req, body, keyID, key, HS2019, "(request-target) host date (created) digest content-type", created)
	case TamperTarget:
		u := *req.URL
		u.Path, u.RawPath = otherInbox(req.URL.Path), ""
		orig := req.URL
		req.URL = &u
		if req.Host == "" {
			req.Host = orig.Host
		}
		err := s.SignPost(req, body, keyID, key)
		req.URL = orig
		return body, err
	case TamperReplay:
		return body, s.SignPost(req, body, keyID, key)
	case TamperUnknownKey:
		return body, s.SignPost(req, body, UnknownKeyID(keyID), key)
	}
	return nil, fmt.Errorf("%w %q", ErrTamper, f.Kind)
}

// UnknownKeyID is a keyId beside keyID's document that no server has: a
// path under it that answers 404.
func UnknownKeyID(keyID string) string {
	doc, _, _ := strings.Cut(keyID, "#")
	return strings.TrimSuffix(doc, "/") + "/forged-keys/unknown#main-key"
}

// otherInbox is an inbox of the same host other than path: the shared
// inbox for a personal one, a personal one for the rest.
func otherInbox(path string) string {
	if path != "/inbox" && strings.HasSuffix(path, "/inbox") {
		return "/inbox"
	}
	return "/users/" + url.PathEscape("forged-target") + "/inbox"
}

// AlterBody is body changed as an attacker would change a signed activity
// in flight: the object's content (or, without one, the activity's
// summary) rewritten, the JSON otherwise the same activity with the same
// id. A body that is not a JSON object gets bytes appended.
func AlterBody(body []byte) []byte {
	var act map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&act); err != nil || act == nil {
		return append(bytes.Clone(body), " "...)
	}
	const altered = "<p>altered after signing</p>"
	if obj, ok := act["object"].(map[string]any); ok && obj["content"] != nil {
		obj["content"] = altered
	} else {
		act["summary"] = altered
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(act); err != nil {
		return append(bytes.Clone(body), " "...)
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// signPostWith signs a POST of body as SignPost does (Date, Digest,
// Content-Type, Host, User-Agent), but over headers, under the label alg,
// with the created parameter when it is not 0.
func (s *Signer) signPostWith(req *http.Request, body []byte, keyID string, key Key, alg Algorithm, headers string, created int64) error {
	if err := s.prepare(req); err != nil {
		return err
	}
	req.Header["Digest"] = []string{Digest(body)}
	if len(req.Header["Content-Type"]) == 0 {
		req.Header["Content-Type"] = []string{ContentTypeActivity}
	}
	var arr [512]byte
	msg, err := appendSigningString(arr[:0], req, requestTarget(req), strings.FieldsSeq(headers), created, 0)
	if err != nil {
		return err
	}
	sig, err := signMessage(alg, key, msg)
	if err != nil {
		return err
	}
	v := `keyId="` + keyID + `",algorithm="` + string(alg) + `",headers="` + headers + `"`
	if created != 0 {
		v += ",created=" + strconv.FormatInt(created, 10)
	}
	req.Header["Signature"] = []string{v + `,signature="` + base64.StdEncoding.EncodeToString(sig) + `"`}
	return nil
}
