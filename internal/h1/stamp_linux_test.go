package h1

import (
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// controlMessage is one control message as the kernel lays it out: a
// header, data, and padding to the next message.
func controlMessage(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

// timespec is a struct timespec's bytes on this machine.
func timespec(sec, nsec int64) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint64(b, uint64(sec))
	binary.NativeEndian.PutUint64(b[8:], uint64(nsec))
	return b
}

// TestReceiveStamp: the kernel's SCM_TIMESTAMPNS message is read as Unix
// nanoseconds wherever it is among the control messages; anything else
// is no stamp (0), never a wrong one.
func TestReceiveStamp(t *testing.T) {
	stamp := controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1_764_000_000, 123_456_789))
	other := controlMessage(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0})
	tests := []struct {
		name string
		oob  []byte
		want int64
	}{
		// The message the kernel sends alone.
		{"the stamp", stamp, 1_764_000_000_123_456_789},
		// Another message first: the stamp is found after it.
		{"after another message", append(append([]byte{}, other...), stamp...), 1_764_000_000_123_456_789},
		// Nothing came (a socket not stamped, or the kernel gave none).
		{"no control messages", nil, 0},
		// Only a message of another kind.
		{"another message only", other, 0},
		// Cut off by a control buffer too short: no stamp.
		{"truncated", stamp[:20], 0},
		// The right type at the wrong level is not the stamp.
		{"wrong level", controlMessage(unix.SOL_IP, unix.SCM_TIMESTAMPNS, timespec(1, 0)), 0},
		// Too short a timespec.
		{"short data", controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1, 0)[:12]), 0},
		// Nanoseconds out of range: not a time the kernel gives.
		{"nanoseconds of a second or more", controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(5, 1_000_000_000)), 0},
		// Before 1970, or zero: not a receive time.
		{"not after the epoch", controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(0, 5)), 0},
		// Seconds that would overflow nanoseconds.
		{"overflowing", controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1<<62, 0)), 0},
	}
	for _, tt := range tests {
		if got := receiveStamp(tt.oob); got != tt.want {
			t.Errorf("%s: receiveStamp = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// FuzzReceiveStamp: whatever bytes come as control messages, the stamp
// read is none or a time after the epoch with its nanoseconds in range,
// and reading never panics.
func FuzzReceiveStamp(f *testing.F) {
	f.Add(controlMessage(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1_764_000_000, 1)))
	f.Add(controlMessage(unix.SOL_IP, unix.IP_TTL, []byte{64, 0, 0, 0}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		if got := receiveStamp(oob); got < 0 || got != 0 && got < 1_000_000_000 {
			t.Fatalf("receiveStamp(%x) = %d, want 0 or a time after the epoch", oob, got)
		}
	})
}

// TestStampedReadAllocatesNothing: reading what arrived on a stamped
// socket, stamp and all, allocates nothing (the flood's dispatcher reads
// every answer it reads itself through it; x/sys's Recvmsg allocated one
// object a call), and the stamp is there.
func TestStampedReadAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	s, ok := adoptSocket(c).(*socket)
	if !ok || !s.stamped {
		t.Fatalf("a dialled TCP connection is not a stamped socket: %T", adoptSocket(c))
	}
	if err := s.unpoll(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	buf, one := make([]byte, 64), []byte("x")
	var stamp int64
	readOne := func() {
		if _, err := peer.Write(one); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
			if n, st, err := s.recvStamped(buf); err == nil && n > 0 {
				stamp = st
				return
			}
		}
		t.Fatal("the byte written did not arrive")
	}
	// The kernel switches its stamping on a moment after the first
	// socket asks (deferred work): the first bytes may come unstamped.
	for deadline := time.Now().Add(time.Second); stamp == 0 && time.Now().Before(deadline); {
		readOne()
		time.Sleep(time.Millisecond)
	}
	allocs := testing.AllocsPerRun(100, readOne)
	if allocs != 0 {
		t.Errorf("a stamped read allocates %v objects, want none", allocs)
	}
	if stamp == 0 {
		t.Error("no stamp on what arrived")
	}
}
