// Package results writes every send of a flood as a line of NDJSON (a
// results file: --results), and reads one back into the run's records, so
// that what the crowd measured can be taken elsewhere (jq, pandas, DuckDB,
// a spreadsheet) and still be reported as the record is. Its lines are
// described in flood/record/SCHEMA.md ("Results").
package results

import (
	"time"

	"github.com/crowdfed/crowd/flood/record"
)

// Schema and Version name the format of a results file: its first line
// says them. A reader refuses a version it does not know; this one reads
// every version from MinVersion to Version (2 added the send line's
// no_answer).
const (
	Schema     = "crowd.flood.results"
	Version    = 2
	MinVersion = 1
)

// The line kinds: the field "line" of every line says which it is.
const (
	LineRun  = "run"  // a run's first line: the schema, the settings, the schedule
	LineSend = "send" // one request taken from the run's source
	LineEnd  = "end"  // a run's last line: how it ended, how many lines were lost
)

// The outcomes of a send (the field "outcome"): what became of the request.
const (
	OutcomeAnswered = "answered"   // an HTTP answer: status and class say which
	OutcomeTimeout  = "timeout"    // no complete answer within the send's timeout
	OutcomeConn     = "conn_error" // no HTTP answer at all: dial, reset, TLS
	OutcomeAborted  = "aborted"    // sent, but the run was interrupted before the answer
	OutcomeDropped  = "dropped"    // due with every slot busy: never sent
	OutcomeUnsent   = "unsent"     // taken from the source, but the run ended before it was due
)

// RunLine is a run's first line. A results file holds one run per flood
// (a ladder's rungs, one after another), each from its RunLine to its
// EndLine.
type RunLine struct {
	Line    string `json:"line"` // LineRun
	Schema  string `json:"schema"`
	Version int    `json:"version"`
	Run     int    `json:"run"` // 0, 1, … in the file
	// Start is the clock's zero: every *_us field of the run's sends is
	// microseconds since it.
	Start       time.Time       `json:"start"`
	Settings    record.Settings `json:"settings"`
	RateHz      float64         `json:"rate_hz"`
	DurationUS  int64           `json:"duration_us"` // the schedule, warm-up included; 0 = bounded by max_sends
	WarmupUS    int64           `json:"warmup_us"`
	MaxSends    int64           `json:"max_sends"`
	MaxInflight int             `json:"max_inflight"`
	TimeoutUS   int64           `json:"timeout_us"`
	TotalUS     int64           `json:"total_us"` // the expected length
	// Dispatcher is how the dispatcher's thread ran the schedule, as the
	// record's parts[].dispatcher; absent in files made before it was
	// kept.
	Dispatcher *record.Dispatcher `json:"dispatcher,omitempty"`
	// Seed seeded the run's draws (--seed replays them), as the record's
	// parts[].seed; absent when the run had none to say, and in files made
	// before it was kept.
	Seed uint64 `json:"seed,omitempty"`
}

// SendLine is one request the engine took from its source, whatever
// became of it. A time the send never reached is null.
type SendLine struct {
	Line     string `json:"line"` // LineSend
	Run      int    `json:"run"`
	Type     string `json:"type"`     // the activity type (the record's breakdown key)
	Measured bool   `json:"measured"` // false inside the warm-up
	Outcome  string `json:"outcome"`
	Class    string `json:"class"`  // the record's status class ("202", "429", "timeout", …); "" when no answer was waited for
	Status   int    `json:"status"` // the HTTP status, 0 without one
	// Starved: late because the source had no request ready (the
	// generator's bottleneck, not the server's).
	Starved bool `json:"starved"`
	// Written: the dispatcher wrote the request itself (or tried to) on
	// a resting connection, a worker reading the answer; sent_us is then
	// the write and picked_us, after it, the worker's pick-up. False in
	// files made before it was kept.
	Written    bool   `json:"written"`
	IntendedUS *int64 `json:"intended_us"` // when the schedule said to send it
	PickedUS   *int64 `json:"picked_us"`   // a worker took it
	SentUS     *int64 `json:"sent_us"`     // the request got its connection
	DoneUS     *int64 `json:"done_us"`     // the answer drained (or the timeout, error or abort)
	Sender     string `json:"sender"`      // the sending actor's id
	Origin     string `json:"origin"`      // its origin's host
	Inbox      string `json:"inbox"`       // the target
	// RequestBytes is the body sent per attempt; ResponseBytes the last
	// attempt's answer body read.
	RequestBytes  int64  `json:"request_bytes"`
	ResponseBytes int64  `json:"response_bytes"`
	Signature     string `json:"signature"` // the scheme of the last attempt: "cavage", "rfc9421"; "" unknown
	FellBack      bool   `json:"fell_back"` // a first attempt was refused and the other scheme sent
	Attempts      int    `json:"attempts"`  // requests sent for it (0 when never sent)
	Forged        string `json:"forged"`    // the forgery's kind, "" for an honest request
	// What the answer said of the server's rate limit: null when unsaid.
	RetryAfter         bool       `json:"retry_after"` // the answer carried Retry-After
	RateLimitLimit     *int64     `json:"ratelimit_limit"`
	RateLimitRemaining *int64     `json:"ratelimit_remaining"`
	RateLimitWindowUS  *int64     `json:"ratelimit_window_us"`
	RateLimitResetUS   *int64     `json:"ratelimit_reset_us"` // from the answer to the reset
	RateLimitResetAt   *time.Time `json:"ratelimit_reset_at"`
	RateLimitIETF      bool       `json:"ratelimit_ietf"` // said in the IETF RateLimit fields
	// NoAnswer is why a timeout or conn_error got no answer, in the
	// record's words ("connection refused", "TLS: ..."); "" otherwise,
	// and in version 1 files. Last, so that CSV columns keep their places.
	NoAnswer string `json:"no_answer"`
}

// EndLine is a run's last line: how the run ended, and what its results
// lack.
type EndLine struct {
	Line        string    `json:"line"` // LineEnd
	Run         int       `json:"run"`
	End         time.Time `json:"end"`           // every send finished
	WindowEndUS int64     `json:"window_end_us"` // the schedule's end as run
	Partial     bool      `json:"partial"`
	Reason      string    `json:"reason"`
	Error       string    `json:"error"` // the source's error, if that stopped the run
	Sends       int64     `json:"sends"` // send lines written for the run
	// Lost is the send lines the writer could not take because it had
	// fallen behind: their sends are in the record, not in this file. A
	// run that lost lines ends in an error (see Writer).
	Lost int64 `json:"lost"`
}

// Sender is what a send's token says of it beyond the engine's Delivery:
// who sent it and how it was signed or forged (Options.Describe).
type Sender struct {
	Actor     string // the actor's id
	Origin    string // its origin's host
	Signature string // the scheme the request is signed with now
	Forged    string // the forgery's kind, "" for an honest request
}
