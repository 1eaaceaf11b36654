//go:build !linux

package flood

import "time"

// preciseSleep falls back to the runtime's timers off Linux.
func preciseSleep(d time.Duration) { time.Sleep(d) }

// preciseThread changes nothing off Linux: the runtime's timers are all
// there is to sleep with.
func preciseThread() (restore func()) { return func() {} }
