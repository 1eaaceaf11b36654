package pasture

import (
	"bufio"
	"io"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/webfinger"
)

// TestDocumentAnswersOnTheWire: the GETs SUTs send most (an actor's
// document, its WebFinger JRD) and their neighbours (HEAD, other media
// types, a browser, 404s) are answered on the wire byte for byte as
// written here, every header included but the Date, so that making them
// cheaper changes nothing a client reads.
func TestDocumentAnswersOnTheWire(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	alice, _ := p.cfg.World.ActorByID("https://flood1.test/users/alice")
	doc := string(alice.DocumentJSON())
	jrd, err := actors.MarshalDoc(webfinger.Describe(alice))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, c := range []struct {
		name, request, want string
	}{
		// The actor document a SUT fetches to verify a signature.
		{"actor as activity+json",
			"GET /users/alice HTTP/1.1\r\nHost: flood1.test\r\nAccept: application/activity+json\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: application/activity+json\r\nVary: Accept\r\n" + contentLength(doc) + "Connection: close\r\n\r\n" + doc},
		// ld+json with the ActivityStreams profile is answered in kind.
		{"actor as ld+json",
			"GET /users/alice HTTP/1.1\r\nHost: flood1.test\r\nAccept: application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: application/ld+json; profile=\"https://www.w3.org/ns/activitystreams\"\r\nVary: Accept\r\n" + contentLength(doc) + "Connection: close\r\n\r\n" + doc},
		// No Accept at all: the document wins.
		{"actor with no Accept",
			"GET /users/alice HTTP/1.1\r\nHost: flood1.test\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: application/activity+json\r\nVary: Accept\r\n" + contentLength(doc) + "Connection: close\r\n\r\n" + doc},
		// HEAD is not among the documents' routes: 405, the length of its
		// unsent reason given.
		{"actor HEAD",
			"HEAD /users/alice HTTP/1.1\r\nHost: flood1.test\r\nAccept: application/activity+json\r\n",
			"HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: 36\r\nConnection: close\r\n\r\n"},
		// The Host's port and case do not matter.
		{"actor on a Host with a port",
			"GET /users/alice HTTP/1.1\r\nHost: FLOOD1.test:8080\r\nAccept: application/activity+json\r\n",
			"HTTP/1.1 200 OK\r\nContent-Type: application/activity+json\r\nVary: Accept\r\n" + contentLength(doc) + "Connection: close\r\n\r\n" + doc},
		// The JRD, its acct: escaped as the bench's clients send it.
		{"webfinger",
			"GET /.well-known/webfinger?resource=acct%3Aalice%40flood1.test HTTP/1.1\r\nHost: flood1.test\r\nAccept: application/jrd+json\r\n",
			"HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: *\r\nContent-Type: application/jrd+json; charset=utf-8\r\n" + contentLength(string(jrd)) + "Connection: close\r\n\r\n" + string(jrd)},
		// An account the origin does not have.
		{"webfinger of no account",
			"GET /.well-known/webfinger?resource=acct:nobody@flood1.test HTTP/1.1\r\nHost: flood1.test\r\n",
			notFound("not found: no account \"nobody\" on flood1.test\n")},
		// An actor the origin does not have.
		{"no such actor",
			"GET /users/nobody HTTP/1.1\r\nHost: flood1.test\r\n",
			notFound("no actor \"nobody\" on flood1.test\n")},
		// A host the crowd does not serve.
		{"unknown host",
			"GET /users/alice HTTP/1.1\r\nHost: elsewhere.test\r\n",
			notFound("no origin \"elsewhere.test\" is served here (this crowd serves 2 origins such as flood1.test)\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rawAnswer(t, srv.Listener.Addr().String(), c.request); got != c.want {
				t.Errorf("answer:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
}

// contentLength is the Content-Length header line of body.
func contentLength(body string) string {
	return "Content-Length: " + strconv.Itoa(len(body)) + "\r\n"
}

// notFound is the whole 404 answer, as http.Error writes it, with reason.
func notFound(reason string) string {
	return "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\n" +
		contentLength(reason) + "Connection: close\r\n\r\n" + reason
}

// dateLine is the Date header, the one line of an answer that changes
// from second to second.
var dateLine = regexp.MustCompile(`(?m)^Date: [^\r]*\r\n`)

// rawAnswer sends request (its header lines, without the blank line) on a
// connection of its own and returns every byte of the answer but the Date.
func rawAnswer(t *testing.T, addr, request string) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, request+"Connection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	return dateLine.ReplaceAllString(string(b), "")
}
