//go:build !linux

package flood

// backgroundThread does nothing off Linux, where the crowd sets no thread
// priorities.
func backgroundThread(int) (restore func()) { return func() {} }
