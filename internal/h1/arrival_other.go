//go:build !linux

package h1

// Socket is false off Linux: no event loop watches the flood's sockets
// there.
func (w Written) Socket() (Socket, bool) { return Socket{}, false }

// Arrived is ArrivedUnsure off Linux: Read is left to tell.
func (w Written) Arrived([]byte) (Arrival, int) { return ArrivedUnsure, 0 }

// ReadArrived is ErrNotPlain off Linux: Read is left to read.
func (t *Transport) ReadArrived(Written, []byte, func(name []byte) bool) (Answer, error) {
	return Answer{}, ErrNotPlain
}
