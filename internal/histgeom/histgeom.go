// Package histgeom is the one geometry of every latency histogram the crowd
// records: the flood's (flood/record) and the fetch-backs its origins serve
// (pasture). Histograms merge exactly only when their geometry is identical,
// and the two sides of a run record meet in one record, so the geometry
// lives below both.
package histgeom

import (
	"fmt"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	// Lowest is the smallest discernible value, in microseconds.
	Lowest = 1
	// Highest is the largest trackable value: one hour in microseconds.
	// Larger values are clamped to it (a send never lives that long: a
	// timeout bounds it), so recording never fails.
	Highest = int64(time.Hour / time.Microsecond)
	// SigFigs keeps three significant digits (0.1 % value resolution).
	SigFigs = 3
)

// New returns an empty histogram of the geometry (values in µs).
func New() *hdr.Histogram { return hdr.New(Lowest, Highest, SigFigs) }

// Record records d in microseconds, clamped to the histogram's range so that
// RecordValue never fails (and never allocates its error).
func Record(h *hdr.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < 0 {
		us = 0
	} else if us > Highest {
		us = Highest
	}
	_ = h.RecordValue(us)
}

// Check refuses a histogram of another geometry, which would not merge
// exactly.
func Check(h *hdr.Histogram) error {
	if h.LowestTrackableValue() != Lowest || h.HighestTrackableValue() != Highest || h.SignificantFigures() != SigFigs {
		return fmt.Errorf("histogram geometry %d..%d/%d, want %d..%d/%d",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), Lowest, Highest, SigFigs)
	}
	return nil
}

// Encode is h in HdrHistogram's V2 compressed, base64 encoding.
func Encode(h *hdr.Histogram) (string, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// Decode reads what Encode wrote; "" is an empty histogram. It refuses a
// geometry other than this one.
func Decode(s string) (*hdr.Histogram, error) {
	if s == "" {
		return New(), nil
	}
	h, err := hdr.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if err := Check(h); err != nil {
		return nil, err
	}
	return h, nil
}
