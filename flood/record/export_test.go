package record

// CanonicalGate is the canonical form of g, which parses back to an equal
// gate: what the parser's tests and fuzz target compare.
func CanonicalGate(g Gate) string { return g.metricString() + g.Op + g.valueString() }
