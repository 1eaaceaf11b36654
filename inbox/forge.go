package inbox

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/signing"
)

// sendForged sends activity from from to inbox forged as kind says
// (`crowd send --tamper`), logs it as any manual send, and says what the
// forgery drew. A replay is the same signed request sent twice: the
// second time only once the first was answered 2xx.
func (in *Inbox) sendForged(ctx context.Context, from *actors.Actor, to, inbox string, body []byte, kind string) (adminapi.SendResult, error) {
	kinds, err := signing.ParseTampers(kind)
	if err != nil || len(kinds) != 1 {
		return adminapi.SendResult{}, fmt.Errorf("%w: tamper %q: want one of %s", ErrBadRequest, kind, signing.TamperNames())
	}
	f := signing.Forgery{Kind: kinds[0]}
	if f.Kind == signing.TamperWrongKey {
		w := in.otherSigner(from)
		f.WrongKeyID, f.WrongKey = w.KeyID, w.SigningKey()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inbox, nil)
	if err != nil {
		return adminapi.SendResult{}, fmt.Errorf("%w: inbox %q: %v", ErrBadRequest, inbox, err)
	}
	sent, err := in.signer.SignForged(req, body, from.KeyID, from.SigningKey(), f)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	post := func() answer { return in.postSigned(withBody(req, sent), sent) }
	res, err := in.sendWith(from, to, inbox, sent, post)
	if err != nil {
		return res, unanswered(err)
	}
	forged := &adminapi.ForgedSend{Kind: string(f.Kind)}
	if f.Kind == signing.TamperReplay {
		forged.OriginalStatus = res.Status
		if adminapi.ForgedVerdict(res.Status) != adminapi.ForgedAccepted {
			forged.Verdict = adminapi.ForgedNotReplayed
			res.Forged = forged
			return res, nil
		}
		if res, err = in.sendWith(from, to, inbox, sent, post); err != nil {
			return res, unanswered(err)
		}
	}
	forged.Verdict = adminapi.ForgedVerdict(res.Status)
	res.Forged = forged
	return res, nil
}

// withBody is a copy of the signed req carrying body, for one sending.
func withBody(req *http.Request, body []byte) *http.Request {
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return r
}

// otherSigner is a crowd actor other than from whose key signs a
// wrong-key forgery: another actor of the world, else from's instance
// actor.
func (in *Inbox) otherSigner(from *actors.Actor) *actors.Actor {
	for _, a := range in.world.Actors() {
		if a.ID != from.ID && a.Key != nil {
			return a
		}
	}
	return from.Origin.Instance
}
