//go:build !linux

package h1

// alive reports whether a resting connection may carry a request: here,
// only that nothing arrived on it that was read already (a server's close
// shows when the request is written).
func (c *conn) alive() bool { return c.r.Buffered() == 0 }

// peeker is Linux's: nothing to keep here.
type peeker struct{}
