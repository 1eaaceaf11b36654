//go:build !linux

package main

import "context"

// openLoopTrial needs Linux's epoll: elsewhere the open-loop reference
// measures nothing, and says so.
func openLoopTrial(_ context.Context, _ [][]byte, _ string, rate float64, _ config) outcome {
	return outcome{Side: "open loop", Rate: rate, Why: "the open-loop reference needs Linux's epoll"}
}
