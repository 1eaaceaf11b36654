//go:build !linux

package h1

import "time"

// Socket is false off Linux: no event loop watches the flood's sockets
// there.
func (w Written) Socket() (Socket, bool) { return Socket{}, false }

// Arrived is ArrivedUnsure off Linux: Read is left to tell.
func (w Written) Arrived([]byte) (Arrival, int) { return ArrivedUnsure, 0 }

// ArrivedAt is false off Linux: no stamps are read there.
func (w Written) ArrivedAt() (time.Time, bool) { return time.Time{}, false }

// Stamped is false off Linux.
func (s Socket) Stamped() bool { return false }

// ReadArrived is ErrNotPlain off Linux: Read is left to read.
func (t *Transport) ReadArrived(Written, []byte, func(name []byte) bool) (Answer, error) {
	return Answer{}, ErrNotPlain
}
