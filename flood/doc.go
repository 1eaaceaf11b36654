// Package flood is the crowd's load engine: it sends prepared (signed)
// requests to a server under test on an absolute open-loop schedule and
// measures it honestly. It knows requests and answers only: what to send
// (activities, signatures, personas, forgeries) is flood/traffic's, which
// implements the engine's Source, Fallback, Holder and AsSigned, never the
// reverse.
//
// The seams, each in its own file:
//
//   - Pacer (pacer.go): the schedule. Send n is due at start + Offset(n),
//     never "send, wait, sleep"; constant rate or Poisson arrivals.
//   - Source: prepared requests, already signed. Run only sends them; a
//     request's Token is the source's own bookkeeping, which the engine
//     hands back settled and asks only as a Fallback (a second attempt
//     with other headers), a Holder (a wait before it leaves) or an
//     AsSigned (whether it may leave at once, as signed). A Source that
//     is DispatcherAware is told how each schedule's dispatcher thread
//     runs before the schedule starts (the pipeline's signers give way to
//     one that is not real-time); a wrapper passes it on (WrapSource).
//   - Guard (internal/dialguard, named in safety.go): resolves every target before anything is sent,
//     refuses public addresses, and dials only the pinned ones.
//   - Transport (client.go, sender.go): what the workers send with, an
//     http.RoundTripper reporting GotConn: net/http's, or internal/h1's
//     (--client), which writes and reads on the worker's own goroutine,
//     and on whose resting connections the dispatcher itself writes a
//     send that leaves as signed, a worker reading its answer, or on
//     Linux, with a real-time dispatcher or with dispatchers sharing the
//     schedule, the dispatcher itself once the whole answer has arrived
//     (answers_linux.go).
//   - Run (engine.go, sender.go): a dispatcher waits for each intended
//     time and hands the send to a free worker slot (having written it,
//     when it could); with MaxInflight slots busy the send is dropped and
//     counted, never delayed. Up to 10 000/s the dispatcher times its
//     sends on an OS thread of its own with no timer slack, under
//     SCHED_DEADLINE (else SCHED_FIFO) where permitted and asked for (by
//     default up to 5 000/s: Plan.Priority, priority.go, sleep_linux.go),
//     and the collector's Schedule says how. Above 5 000/s (10 000/s
//     where realtime is asked for), with a Source that never waits
//     (AlwaysReady) and h1's transport over plain HTTP on Linux, one
//     dispatcher a core shares the schedule instead (engine.go's feed),
//     each on a thread of its own with its own connections and epoll, as
//     the bench's open-loop reference does. Times go from the intended
//     time (latency, coordinated-omission corrected), from the actual
//     send (service), and in between (lateness).
//   - Collector (collector.go): what Run feeds every offer, answer and
//     settlement, as vegeta's Attack feeds Metrics.Add. The record's
//     record.Recorder (HDR histograms per worker shard and activity type,
//     the timeline, checkpoints), the live metrics and the sources'
//     bookkeeping (traffic.Settle) are collectors; Collectors joins them.
//   - Ladder (ladder.go): rungs of rates stopping at the shoulder.
//
// The engine imports flood/record, never the reverse: the collector's
// values (record.Offer, Delivery, Outcome) are record's types, so the
// record (schema, Merge, Gates, Compare, checkpoint files, verdicts) and
// flood/report (live line, tables, Markdown, HTML) never need the engine.
//
// A command runs a flood like this (errors handled, flags parsed):
//
//	gates, err := record.ParseGates(expects)          // usage error: exit 2
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
//	defer stop()
//	pacer, err := flood.NewPacer(arrivals, rate, seed)
//	live := report.NewLive(os.Stderr, isTerminal)
//	recorder := record.NewRecorder(record.RecorderOptions{Progress: live.Update})
//	err = flood.Run(ctx, flood.Plan{
//		Pacer: pacer, Source: source, Transport: flood.NewClientTransport(flood.TransportOptions{
//			Client: client, MaxInflight: maxInflight, Timeout: timeout, TLS: tlsConfig}), // client: ParseClient(--client)
//		Limits: flood.Limits{Duration: seconds, Warmup: warmup, MaxInflight: maxInflight, Timeout: timeout},
//	}, recorder)                                     // ErrInvalidPlan: exit 2
//	live.Done()
//	rec, err := recorder.Result().Record(record.Settings{Label: label, Arrivals: arrivals,
//		Mix: mix, Signing: signing, Target: target, Shard: shard})
//	path, err := record.NewRecordFile("out/load").FinalWith(rec, rec) // also after Ctrl-C
//	report.WriteTable(os.Stdout, rec)
//	results, _ := record.CheckGates(rec, gates)
//	os.Exit(flood.ExitCode(nil, results))             // 0 met, 1 missed
//
// A ladder calls Run once per rung through Ladder.Run, with
// Ladder.RungPlan setting the rung's pacer, warm-up and duration.
package flood
