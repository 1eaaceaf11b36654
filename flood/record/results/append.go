package results

import (
	"strconv"

	"github.com/crowdfed/crowd/internal/jsonquote"
)

// appendSendLine appends l as the Writer's json.Encoder writes it (HTML
// left unescaped), its newline included, and reports whether it did: a
// line with a rate-limit reset time is left to the Encoder, whose time
// encoding (and refusal of a year it cannot write) it then keeps. The
// Encoder's reflection was most of a line's cost, and a fast flood
// writes one a send; FuzzAppendSendLine keeps the two byte for byte.
func appendSendLine(b []byte, l *SendLine) ([]byte, bool) {
	if l.RateLimitResetAt != nil {
		return b, false
	}
	b = appendStringField(b, `{"line":`, l.Line)
	b = appendIntField(b, `,"run":`, int64(l.Run))
	b = appendStringField(b, `,"type":`, l.Type)
	b = appendBoolField(b, `,"measured":`, l.Measured)
	b = appendStringField(b, `,"outcome":`, l.Outcome)
	b = appendStringField(b, `,"class":`, l.Class)
	b = appendIntField(b, `,"status":`, int64(l.Status))
	b = appendBoolField(b, `,"starved":`, l.Starved)
	b = appendBoolField(b, `,"written":`, l.Written)
	b = appendOptionalField(b, `,"intended_us":`, l.IntendedUS)
	b = appendOptionalField(b, `,"picked_us":`, l.PickedUS)
	b = appendOptionalField(b, `,"sent_us":`, l.SentUS)
	b = appendOptionalField(b, `,"done_us":`, l.DoneUS)
	b = appendStringField(b, `,"sender":`, l.Sender)
	b = appendStringField(b, `,"origin":`, l.Origin)
	b = appendStringField(b, `,"inbox":`, l.Inbox)
	b = appendIntField(b, `,"request_bytes":`, l.RequestBytes)
	b = appendIntField(b, `,"response_bytes":`, l.ResponseBytes)
	b = appendStringField(b, `,"signature":`, l.Signature)
	b = appendBoolField(b, `,"fell_back":`, l.FellBack)
	b = appendIntField(b, `,"attempts":`, int64(l.Attempts))
	b = appendStringField(b, `,"forged":`, l.Forged)
	b = appendBoolField(b, `,"retry_after":`, l.RetryAfter)
	b = appendOptionalField(b, `,"ratelimit_limit":`, l.RateLimitLimit)
	b = appendOptionalField(b, `,"ratelimit_remaining":`, l.RateLimitRemaining)
	b = appendOptionalField(b, `,"ratelimit_window_us":`, l.RateLimitWindowUS)
	b = appendOptionalField(b, `,"ratelimit_reset_us":`, l.RateLimitResetUS)
	b = append(b, `,"ratelimit_reset_at":null`...)
	b = appendBoolField(b, `,"ratelimit_ietf":`, l.RateLimitIETF)
	b = appendStringField(b, `,"no_answer":`, l.NoAnswer)
	return append(b, "}\n"...), true
}

func appendIntField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendBoolField(b []byte, name string, v bool) []byte {
	return strconv.AppendBool(append(b, name...), v)
}

// appendOptionalField appends v, or null when it is nil.
func appendOptionalField(b []byte, name string, v *int64) []byte {
	b = append(b, name...)
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

func appendStringField(b []byte, name, s string) []byte {
	return jsonquote.AppendString(append(b, name...), s)
}
