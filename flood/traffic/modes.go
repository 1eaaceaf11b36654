package traffic

import "strings"

// SigningMode says when a flood's requests are signed (--signing); see
// SigningPipeline, SigningPresign and SigningJIT. Parse it once with
// ParseSigning.
type SigningMode string

// Signing modes (--signing): when the flood's requests are signed.
const (
	// SigningPipeline signs in background goroutines (one per core) that
	// keep a bounded buffer of ready requests full; the dispatcher only
	// takes one. When the buffer runs dry the send is late and counted as
	// "source starved": the crowd's signing is then the bottleneck, and the
	// record says so. The default.
	SigningPipeline SigningMode = "pipeline"
	// SigningPresign signs every request before the timed window, so the
	// window measures sending alone; its Dates age by up to the window's
	// length, which Mastodon bounds at 1 h.
	SigningPresign SigningMode = "presign"
	// SigningJIT signs each request in the engine's dispatcher, which asks
	// for the next request while it waits for that request's time: signing
	// is free while it fits in the gap between sends (1/rate), and beyond
	// that every send is late by the excess, which shows as lateness and is
	// counted as starvation (the generator's bottleneck). It measures what
	// an unpipelined sender would do.
	SigningJIT SigningMode = "jit"
)

// ParseSigning reads --signing. Errors are *UsageError.
func ParseSigning(s string) (SigningMode, error) {
	switch m := SigningMode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", SigningPipeline:
		return SigningPipeline, nil
	case SigningPresign, SigningJIT:
		return m, nil
	}
	return "", usage(s, "--signing: want pipeline, presign or jit")
}
