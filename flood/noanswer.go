package flood

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/dialguard"
)

// NoAnswerReason names why a send got no HTTP answer (record.Delivery's
// NoAnswer, and a request the run makes before it sends), in words that
// stay the same from send to send, so that a record can count them, and
// that say what to mend: nothing listening, a certificate this machine's
// roots do not trust, TLS spoken to a plain HTTP port. An error it cannot
// name is told by its innermost text.
func NoAnswerReason(err error) string {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		notTLS    tls.RecordHeaderError
		dnsErr    *net.DNSError
		opErr     *net.OpError
	)
	switch {
	case err == nil:
		return ""
	case isTimeout(err):
		return record.NoAnswerTimeout
	case errors.Is(err, dialguard.ErrPublicTarget):
		return record.NoAnswerPublic
	case errors.Is(err, syscall.ECONNREFUSED):
		return record.NoAnswerRefused
	case errors.Is(err, syscall.ECONNRESET):
		return record.NoAnswerReset
	case errors.Is(err, syscall.EPIPE):
		return record.NoAnswerBrokenPipe
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return record.NoAnswerNoRoute
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return record.NoAnswerNoSource
	case errors.As(err, &unknownCA):
		return record.NoAnswerUnknownCA
	case errors.As(err, &hostname):
		return record.NoAnswerWrongName
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return record.NoAnswerExpired
		}
		return record.NoAnswerInvalidCert
	case errors.As(err, &notTLS), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// net/http words the record header error so; the fast client keeps it.
		return record.NoAnswerNotTLS
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		// The server's alert in the handshake: it refused this client.
		return record.NoAnswerTLSAlert + " (" + opErr.Err.Error() + ")"
	case errors.As(err, &dnsErr):
		return record.NoAnswerUnresolved
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return record.NoAnswerClosed
	}
	for next := errors.Unwrap(err); next != nil; next = errors.Unwrap(err) {
		err = next
	}
	return err.Error()
}
