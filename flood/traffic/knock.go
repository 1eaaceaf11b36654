// The signature scheme of a flood (--signature) and the double knock:
// RFC 9421 first, draft-cavage again on a 4xx, per target host remembered.

package traffic

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/signing"
)

// SignatureScheme is --signature: which HTTP signature scheme the flood
// signs with.
type SignatureScheme string

const (
	// SignatureCavage signs draft-cavage-http-signatures-12, what every
	// fediverse server verifies. The default.
	SignatureCavage SignatureScheme = "cavage"
	// SignatureRFC9421 signs RFC 9421 HTTP Message Signatures only: loads a
	// SUT's newer verification path (Mastodon >= 4.5, Fedify >= 1.6).
	SignatureRFC9421 SignatureScheme = "rfc9421"
	// SignatureBoth knocks twice as Fedify >= 1.6 does: RFC 9421 first,
	// draft-cavage again on a 4xx (but 429), the scheme that worked
	// remembered per target host (see Knocker).
	SignatureBoth SignatureScheme = "both"
)

// ParseSignature reads --signature. Errors are *UsageError.
func ParseSignature(s string) (SignatureScheme, error) {
	switch m := SignatureScheme(strings.ToLower(strings.TrimSpace(s))); m {
	case "", SignatureCavage:
		return SignatureCavage, nil
	case SignatureRFC9421, SignatureBoth:
		return m, nil
	}
	return "", usage(s, "--signature: want cavage, rfc9421 or both")
}

// Knocker signs a flood's requests with its scheme and, for
// SignatureBoth, decides each first attempt's scheme by the target host
// and sends a second attempt when the first is refused. It keeps the
// counters of the record's Signatures section. One Knocker serves every
// source and sender of a flood; it is safe for concurrent use.
//
// The double knock: a first attempt is signed RFC 9421 unless its host is
// remembered as cavage-first; an answer 400-499 but 429 has the same
// activity signed at once with the other scheme and sent again (its
// answer is the send's); a host is remembered with the scheme of a second
// attempt answered 2xx. Fedify also knocks twice on 429 and 5xx; the
// crowd does not, so that a throttling or failing SUT is not sent every
// activity twice.
type Knocker struct {
	mode   SignatureScheme
	signer *signing.Signer
	hosts  sync.Map // target host → signing.Scheme to try first (both); absent = RFC 9421

	firstCavage, firstRFC9421     atomic.Int64
	fellBack, fellForward, second atomic.Int64
	resigned, resignNanos         atomic.Int64
	triggers                      [100]atomic.Int64 // by status - 400
}

// NewKnocker returns the Knocker of a flood signing with signer under mode.
func NewKnocker(mode SignatureScheme, signer *signing.Signer) *Knocker {
	if mode == "" {
		mode = SignatureCavage
	}
	return &Knocker{mode: mode, signer: signer}
}

// Mode is the Knocker's --signature.
func (k *Knocker) Mode() SignatureScheme { return k.mode }

// Knock is what it takes to sign a prepared request again with the other
// scheme (Ticket.Knock).
type Knock struct {
	Scheme signing.Scheme // what the request is signed with now
	Sender *actors.Actor  // who signed it
	k      *Knocker
	tried  signing.Scheme // what the first attempt went with; its sender's alone
}

// firstScheme is the scheme a first attempt to host is signed with.
func (k *Knocker) firstScheme(host string) signing.Scheme {
	switch k.mode {
	case SignatureCavage:
		return signing.SchemeCavage
	case SignatureRFC9421:
		return signing.SchemeRFC9421
	}
	if s, ok := k.hosts.Load(host); ok {
		return s.(signing.Scheme)
	}
	return signing.SchemeRFC9421
}

// other is the scheme a second attempt takes.
func other(s signing.Scheme) signing.Scheme {
	if s == signing.SchemeRFC9421 {
		return signing.SchemeCavage
	}
	return signing.SchemeRFC9421
}

// refused reports whether a first answer asks for a second attempt: a
// 4xx but 429, which throttles and says nothing of the signature.
func refused(status int) bool {
	return status >= 400 && status < 500 && status != http.StatusTooManyRequests
}

// resign signs p's activity again with scheme, now: a copy of its headers
// with a fresh Date and the other scheme's headers gone. A measured send's
// signature is counted, with the time it took.
func (n *Knock) resign(p *flood.Prepared, scheme signing.Scheme, measured bool) (http.Header, error) {
	start := time.Now()
	h := p.Header.Clone()
	delete(h, "Date")
	req := &http.Request{Method: p.Method, URL: p.URL, Header: h, Host: p.Host, Body: http.NoBody}
	err := n.k.signer.Sign(scheme, req, p.Body, n.Sender.KeyID, n.Sender.SigningKey())
	if measured {
		n.k.resigned.Add(1)
		n.k.resignNanos.Add(int64(time.Since(start)))
	}
	if err != nil {
		return nil, fmt.Errorf("flood: signing %s again with %s: %w", p.Type, scheme, err)
	}
	return req.Header, nil
}

// attempt is the double knock as the engine asks it (flood.Fallback): attempt 0
// goes signed as p is, or signed again first when its host's scheme
// changed since p was signed; for SignatureBoth, a refused first answer
// (status) has attempt 1 signed with the other scheme, and a second
// attempt answered 2xx has its host remembered with that scheme. measured
// says whether the send counts in the record. A signature that cannot be
// made at send time (the same key signed the request ahead, so only a
// broken Key fails) ends the send with its error, which the record counts
// as a connection error.
func (n *Knock) attempt(p *flood.Prepared, i, status int, measured bool) (http.Header, bool, error) {
	k := n.k
	switch i {
	case 0:
		return n.first(p, measured)
	case 1:
		if k.mode != SignatureBoth || !refused(status) {
			return nil, false, nil
		}
		second := other(n.tried)
		if measured {
			k.triggers[status-400].Add(1)
			if second == signing.SchemeCavage {
				k.fellBack.Add(1)
			} else {
				k.fellForward.Add(1)
			}
		}
		h, err := n.resign(p, second, measured)
		return h, err == nil, err
	}
	if status >= 200 && status < 300 {
		if measured {
			k.second.Add(1)
		}
		k.hosts.Store(p.URL.Host, other(n.tried))
	}
	return nil, false, nil
}

// firstAsSigned reports whether the first attempt always goes as the
// request was signed: with one scheme (--signature cavage or rfc9421),
// where first gives p.Header whatever the host; not when knocking twice,
// where the host's scheme may change before the send and have it signed
// again.
func (n *Knock) firstAsSigned() bool { return n.k.mode != SignatureBoth }

// first is the header of the first attempt, counted by its scheme.
func (n *Knock) first(p *flood.Prepared, measured bool) (http.Header, bool, error) {
	k := n.k
	scheme, header := n.Scheme, p.Header
	if k.mode == SignatureBoth {
		if want := k.firstScheme(p.URL.Host); want != scheme {
			var err error
			if header, err = n.resign(p, want, measured); err != nil {
				return nil, false, err
			}
			scheme = want
		}
	}
	n.tried = scheme
	if measured {
		if scheme == signing.SchemeRFC9421 {
			k.firstRFC9421.Add(1)
		} else {
			k.firstCavage.Add(1)
		}
	}
	return header, true, nil
}

// Signatures is the record's section: the counters so far.
func (k *Knocker) Signatures() record.Signatures {
	s := record.Signatures{
		Scheme:         string(k.mode),
		FirstCavage:    k.firstCavage.Load(),
		FirstRFC9421:   k.firstRFC9421.Load(),
		FellBack:       k.fellBack.Load(),
		FellForward:    k.fellForward.Load(),
		SecondAccepted: k.second.Load(),
		Resigned:       k.resigned.Load(),
		ResignSeconds:  time.Duration(k.resignNanos.Load()).Seconds(),
	}
	for i := range k.triggers {
		s.AddTrigger(400+i, k.triggers[i].Load())
	}
	k.hosts.Range(func(_, v any) bool {
		if v.(signing.Scheme) == signing.SchemeCavage {
			s.CavageFirstHosts++
		}
		return true
	})
	return s
}
