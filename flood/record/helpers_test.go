package record_test

import (
	"flag"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// hdrNew builds a histogram of any geometry (to test refusals).
func hdrNew(lo, hi int64, sig int) *hdr.Histogram { return hdr.New(lo, hi, sig) }

func us(d time.Duration) int64 { return int64(d / time.Microsecond) }

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")
