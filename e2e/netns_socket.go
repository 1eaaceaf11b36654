package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// inside runs fn on a thread that has entered the namespace, so the sockets fn makes belong to
// it (a socket belongs to the namespace of the thread that creates it). The goroutine takes a
// thread of its own, enters, runs fn, and goes back; should it fail to go back, it exits still
// locked and Go discards the thread.
func (n *Netns) inside(fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/var/run/netns", n.Name))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		defer target.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			ch <- err
			return
		}
		ch <- fn()
		if setns(self) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return <-ch
}

// Listen makes a listener inside the namespace, served from the test process: a test SUT
// written in Go that processes in the namespace reach at addr (IP:port).
func (n *Netns) Listen(network, addr string) (net.Listener, error) {
	var l net.Listener
	err := n.inside(func() error {
		var err error
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// Link joins two namespaces with a veth pair, addressed aAddr in n and bAddr in peer (CIDR
// notation, one /24 or so), both up: two machines on one link, so that the peer sees the real
// source addresses of what n sends. The pair goes away with the namespaces.
func (n *Netns) Link(t testing.TB, peer *Netns, aAddr, bAddr string) (aDev string) {
	t.Helper()
	var rnd [3]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	aDev, bDev := "cwa"+hex.EncodeToString(rnd[:]), "cwb"+hex.EncodeToString(rnd[:])
	if out, err := exec.Command("ip", "link", "add", aDev, "netns", n.Name, "type", "veth", "peer", "name", bDev, "netns", peer.Name).CombinedOutput(); err != nil {
		t.Fatalf("ip link add veth: %v\n%s", err, out)
	}
	n.Run(t, "ip", "addr", "add", aAddr, "dev", aDev)
	n.Run(t, "ip", "link", "set", aDev, "up")
	peer.Run(t, "ip", "addr", "add", bAddr, "dev", bDev)
	peer.Run(t, "ip", "link", "set", bDev, "up")
	return aDev
}
