//go:build !linux

package flood

// backgroundThread does nothing off Linux: thread priorities are a Linux
// feature here.
func backgroundThread() {}
