//go:build !linux

package traffic

// backgroundThread does nothing off Linux, where the crowd sets no thread
// priorities.
func backgroundThread(nice, slot int) (restore func() (ok bool), pinned, idle bool) {
	return func() bool { return true }, false, false
}
