// Package livemetrics exposes a running flood as Prometheus metrics: it is a
// flood.Collector (every send, as the engine offers and answers it) and a
// Progress sink (the
// once-a-second tick), recording into its own prometheus.Registry (never the
// global one), which a flood serves on --metrics-addr and pushes to the
// attached crowd serve's admin API (Push), so one scrape target shows the
// load beside the crowd's own metrics. METRICS.md at the repository root
// lists every series.
//
// Counters and histograms count the measured window only (the warm-up is
// left out, as the run record leaves it out), so their final values equal
// the record's: crowd_flood_sent_total{type} its types[].counts.sent,
// crowd_flood_completed_total{type,class} its tally, the histograms' counts
// its latency, service and lateness counts.
package livemetrics
