package main

import (
	"testing"
	"time"
)

// TestAttributeTracesByPart reads `go tool pprof -traces` output as the
// parts of a delivery: each sample to the first part one of its frames
// matches, in the parts' order.
func TestAttributeTracesByPart(t *testing.T) {
	traces := `File: bench
Type: cpu
Duration: 2s, Total samples = 94ms (4.7%)
-----------+-------------------------------------------------------
      30ms   github.com/crowdfed/crowd/signing.(*libcryptoKey).Verify
             github.com/crowdfed/crowd/signing.(*Verifier).VerifyParsed
             github.com/crowdfed/crowd/inbox.(*Inbox).receive
             net/http.(*conn).serve
-----------+-------------------------------------------------------
      20ms   runtime.mallocgc
             encoding/json.Unmarshal
             github.com/crowdfed/crowd/inbox.ParseActivity (inline)
             github.com/crowdfed/crowd/inbox.(*Inbox).receive
-----------+-------------------------------------------------------
      10ms   encoding/json.(*decodeState).object
             github.com/crowdfed/crowd/inbox.ParseActivity
             github.com/crowdfed/crowd/inbox.(*Inbox).receive
-----------+-------------------------------------------------------
       4ms   github.com/crowdfed/crowd/inbox.(*jsonScanner).str
             github.com/crowdfed/crowd/inbox.scanNodeShape
             github.com/crowdfed/crowd/inbox.parseActivity
             github.com/crowdfed/crowd/inbox.(*Inbox).receive
-----------+-------------------------------------------------------
   15000us   github.com/crowdfed/crowd/inbox.appendEntryJSON
             github.com/crowdfed/crowd/inbox.(*lineEncoder).line
             github.com/crowdfed/crowd/inbox.(*ActivityLog).writer
-----------+-------------------------------------------------------
      10ms   internal/runtime/syscall.Syscall6
             syscall.Syscall
             internal/poll.(*FD).Write
             net/http.(*response).finishRequest
-----------+-------------------------------------------------------
       5ms   runtime.futex
             runtime.findRunnable
             runtime.schedule
-----------+-------------------------------------------------------
`
	got, err := attribute(traces, deliveryParts())
	if err != nil {
		t.Fatal(err)
	}
	for part, want := range map[string]time.Duration{
		// Verification under the inbox's receive is the signature's.
		"signature: header parse and verification": 30 * time.Millisecond,
		// An allocation while parsing is allocation, not the parse.
		"allocation and GC": 20 * time.Millisecond,
		// The parse's own decoding, inlined frames included, and the
		// scan under the inbox's own entry to it.
		"activity parse": 14 * time.Millisecond,
		// The log writer's encoding, in µs.
		"activity log: line and write": 15 * time.Millisecond,
		// A write to the socket below net/http.
		"HTTP server, body read, kernel": 10 * time.Millisecond,
		// The scheduler matches no part.
		"other": 5 * time.Millisecond,
	} {
		if got[part] != want {
			t.Errorf("%s: %v, want %v", part, got[part], want)
		}
	}
	if _, err := attribute("File: bench\nType: cpu\n", deliveryParts()); err == nil {
		t.Error("a profile with no sample was read without an error")
	}
}
