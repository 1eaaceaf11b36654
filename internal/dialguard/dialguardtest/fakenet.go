// Package dialguardtest is a network for tests of code that sends through
// a dialguard.Guard: names resolve from a table, and every dial is counted
// and fails, so a test can show that nothing was sent without any public
// address having to exist.
package dialguardtest

import (
	"context"
	"errors"
	"net"
	"sync"
)

// FakeNet is a resolver and a dialer that never touch the network. Use
// Resolve and Dial as dialguard.GuardOptions' Resolve and Dial. It is safe
// for concurrent use.
type FakeNet struct {
	// Names maps host names to their addresses; other names do not exist.
	Names map[string][]string

	mu      sync.Mutex
	lookups []string
	dials   []string
}

// Resolve answers host from Names and records the lookup.
func (f *FakeNet) Resolve(_ context.Context, host string) ([]net.IP, error) {
	f.mu.Lock()
	f.lookups = append(f.lookups, host)
	f.mu.Unlock()
	addrs, ok := f.Names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var ips []net.IP
	for _, a := range addrs {
		ips = append(ips, net.ParseIP(a))
	}
	return ips, nil
}

// Dial records addr and fails: the fake network connects nowhere.
func (f *FakeNet) Dial(_ context.Context, _, addr string) (net.Conn, error) {
	f.mu.Lock()
	f.dials = append(f.dials, addr)
	f.mu.Unlock()
	return nil, errors.New("fake network: no connection")
}

// Dials returns the addresses dialed so far, in order.
func (f *FakeNet) Dials() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.dials...)
}

// Lookups returns the names resolved so far, in order.
func (f *FakeNet) Lookups() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.lookups...)
}
