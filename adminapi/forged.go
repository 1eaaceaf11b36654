package adminapi

// Verdicts of a forged send (ForgedSend.Verdict).
const (
	// ForgedRefused: the target answered 4xx (not 404, 410 or 429), as a
	// correct server does.
	ForgedRefused = "refused"
	// ForgedAccepted: the target answered 2xx: a security finding.
	ForgedAccepted = "accepted"
	// ForgedNoVerdict: 404, 410, 429, 5xx, 1xx/3xx or no answer: no
	// verdict either way (see ForgedVerdict).
	ForgedNoVerdict = "no verdict"
	// ForgedNotReplayed: the original of a replay was not accepted, so
	// it was not sent again.
	ForgedNotReplayed = "not replayed"
)

// ForgedSend is what a forged send (SendRequest.Tamper) drew. The
// SendResult around it is the forged request's: for a replay, the second
// sending of the same request.
type ForgedSend struct {
	// Kind is the tamper kind.
	Kind string `json:"kind"`
	// Verdict is ForgedRefused, ForgedAccepted, ForgedNoVerdict or (a
	// replay whose original was not accepted) ForgedNotReplayed.
	Verdict string `json:"verdict"`
	// OriginalStatus is, for a replay, the answer to the request's first
	// sending.
	OriginalStatus int `json:"original_status,omitempty"`
}

// ForgedVerdict is the verdict of a forged request answered status (0:
// no answer). 404 (no such inbox), 410 (gone) and 429 (rate limited) are
// no refusal: they answer about the inbox or the load, and an honest
// request there draws them too, so a typo in the inbox or a busy SUT would
// pass a forgery it never checked. The flood judges its forgeries alike
// (record.Security).
func ForgedVerdict(status int) string {
	switch {
	case status >= 200 && status < 300:
		return ForgedAccepted
	case status == 404 || status == 410 || status == 429:
		return ForgedNoVerdict
	case status >= 400 && status < 500:
		return ForgedRefused
	}
	return ForgedNoVerdict
}
