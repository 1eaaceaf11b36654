//go:build !linux

package flood

import "time"

// preciseSleep falls back to the runtime's timers off Linux.
func preciseSleep(d time.Duration) { time.Sleep(d) }
