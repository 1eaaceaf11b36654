//go:build !linux

package flood

import (
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// preciseSleep falls back to the runtime's timers off Linux.
func preciseSleep(d time.Duration) { time.Sleep(d) }

// preciseThread changes nothing off Linux: the runtime's timers are all
// there is to sleep with, and the dispatcher's thread keeps its policy.
func preciseThread(realtime bool) (record.Dispatcher, func()) {
	d := record.Dispatcher{}
	if realtime {
		d.Refused = "a real-time dispatcher is set on Linux only"
	}
	return d, func() {}
}
