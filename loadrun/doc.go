// Package loadrun is one load run as a value: a Config that Validate
// checks whole (every problem at once), an Environment that is either a
// running `crowd serve` reached through its admin API (attached) or the
// world started in this process (standalone), a flood at one rate or a
// ladder of rates, and optional Observers (the audience of `crowd run`)
// that the run calls at set-up, at its start, and at its end. The record
// is composed in memory (the flood's, plus what the observers add) and
// written once, beside the checkpoints that keep a killed run's partial
// record.
//
// The CLI (cmd/crowd) reads flags into a Config and calls Run; it maps a
// *record.UsageError to exit status 2, ErrInterrupted to 130, any other error to
// 1. Everything between (queue sizing, the key check of an attached
// crowd, GOMAXPROCS, the drain) is here.
package loadrun
