//go:build !unix

package inbox

import "time"

// processCPU is unknown here: the benchmarks then report no cpu-ns/op.
func processCPU() (time.Duration, bool) { return 0, false }
