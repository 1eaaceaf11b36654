// Package pipenet is an in-memory network for tests of the whole HTTP stack (a real
// http.Server, a real http.Transport) under testing/synctest, whose fake clock stands still
// while a goroutine waits on a real socket. Only tests import it.
package pipenet

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Listener is a net.Listener whose every dial is one net.Pipe: Accept returns the other end.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns a listener no one has dialled yet.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept returns the server end of the next dial, or net.ErrClosed once closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close makes Accept and DialContext fail with net.ErrClosed; it may be called more than once.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is the same placeholder for every listener.
func (l *Listener) Addr() net.Addr { return addr{} }

// DialContext connects to the listener, whatever the address; it has the signature of
// http.Transport.DialContext.
func (l *Listener) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }

// Serve serves h on a new Listener until the test ends, and returns the listener to dial.
// Under synctest, call it inside the bubble.
func Serve(t testing.TB, h http.Handler) *Listener {
	l := NewListener()
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-served
	})
	return l
}
