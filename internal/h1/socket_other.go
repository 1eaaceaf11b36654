//go:build !linux

package h1

import "net"

// adoptSocket is raw off Linux: no event loop watches the flood's
// sockets there, so the runtime's poller keeps them.
func adoptSocket(raw net.Conn) net.Conn { return raw }
