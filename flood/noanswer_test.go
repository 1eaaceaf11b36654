package flood

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/crowdfed/crowd/internal/loopback"
)

// TestNoAnswerReasonNamesWhatToMend: a POST that gets no answer from a
// real listener, sent by either of the flood's clients, is named by what
// went wrong there, in words without an address or a port, so that a
// record counts one reason per cause.
func TestNoAnswerReasonNamesWhatToMend(t *testing.T) {
	forClients(t, testNoAnswerReasonNamesWhatToMend)
}

func testNoAnswerReasonNamesWhatToMend(t *testing.T, client Client) {
	quiet := log.New(io.Discard, "", 0) // the handshakes refused here are the point, not news
	tlsSink := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	tlsSink.Config.ErrorLog = quiet
	tlsSink.StartTLS()
	defer tlsSink.Close()
	plainSink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer plainSink.Close()
	// A TLS server that wants a client certificate, which the flood never has.
	wantsCert := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	wantsCert.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	wantsCert.Config.ErrorLog = quiet
	wantsCert.StartTLS()
	defer wantsCert.Close()
	// A listener that takes each connection, reads the request and closes
	// it without an answer (unread, the close would be a reset).
	closer, err := net.Listen("tcp", loopback.Free(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	go func() {
		for {
			c, err := closer.Accept()
			if err != nil {
				return
			}
			c.Read(make([]byte, 4096))
			c.Close()
		}
	}()
	trusting := x509.NewCertPool()
	trusting.AddCert(tlsSink.Certificate())
	certRoots := x509.NewCertPool()
	certRoots.AddCert(wantsCert.Certificate())
	post := func(url string, tc *tls.Config) error {
		tr := NewClientTransport(TransportOptions{Client: client, MaxInflight: 1, Timeout: 5 * time.Second, TLS: tc})
		defer tr.CloseIdleConnections()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		if err != nil {
			return err
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "https://") }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		// Nothing listens on the port.
		{"refused", post("http://"+loopback.Free(t)+"/inbox", nil), "connection refused"},
		// A certificate by an authority this machine's roots do not hold (the crowd's CA, not installed).
		{"unknown CA", post(tlsSink.URL+"/inbox", &tls.Config{}), "TLS: certificate signed by an authority not trusted"},
		// A trusted certificate for other names than the one asked.
		{"other name", post(tlsSink.URL+"/inbox", &tls.Config{RootCAs: trusting, ServerName: "flood1.test"}), "TLS: certificate not valid for the host"},
		// TLS spoken to a plain HTTP listener.
		{"not TLS", post("https://"+strings.TrimPrefix(plainSink.URL, "http://")+"/inbox", nil), "TLS: the answer is not TLS (plain HTTP on that port?)"},
		// The server's alert: it wants a client certificate.
		{"refused handshake", post("https://"+host(wantsCert)+"/inbox", &tls.Config{RootCAs: certRoots}), "TLS: the server refused the handshake (tls: certificate required)"},
		// Taken and closed without a word.
		{"closed", post("http://"+closer.Addr().String()+"/inbox", nil), "connection closed before an answer"},
		// The send's own deadline passed.
		{"timed out", fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		// A name no resolver knows (the error as net returns it).
		{"unresolved", fmt.Errorf("dial: %w", &net.DNSError{Err: "no such host", Name: "sut.test", IsNotFound: true}), "name not resolved"},
		// Anything else: its innermost text.
		{"unknown", fmt.Errorf("post: %w", fmt.Errorf("read: %w", errors.New("h1: bad chunk size line"))), "h1: bad chunk size line"},
	} {
		if c.err == nil {
			t.Errorf("%s: the POST was answered", c.name)
			continue
		}
		if got := NoAnswerReason(c.err); got != c.want {
			t.Errorf("%s: %q (from %v), want %q", c.name, got, c.err, c.want)
		}
	}
}
