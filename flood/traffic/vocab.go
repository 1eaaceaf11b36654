package traffic

// SigningMode says when a flood's requests are signed (--signing); see
// SigningPipeline, SigningPresign and SigningJIT. Parse it once with
// ParseSigning.
type SigningMode string
