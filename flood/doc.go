// Package flood is the crowd's load engine: it sends prepared (signed)
// requests to a server under test on an absolute open-loop schedule and
// measures it honestly.
//
// The seams, each in its own file:
//
//   - Pacer (pacer.go): the schedule. Send n is due at start + Offset(n),
//     never "send, wait, sleep"; constant rate or Poisson arrivals.
//   - Source: prepared requests, already signed. Run only sends them.
//   - Activities (activity.go): the Generator draws Creates, Likes and
//     Follows by a weighted Mix, senders uniform or Zipf, personas
//     uniform; a Registrar records the Follows in the crowd's graph off
//     the send path.
//   - Outboxes (outbox.go): an OutboxFeed, a Plan.Settled consumer, hands
//     the Creates that left, in batches, to the crowd's outboxes (its
//     admin API, or the world in this process).
//   - Personas (personas.go): the targets, discovered by WebFinger and
//     signed fetches of their actors and outboxes (through apclient, the
//     crowd's one ActivityPub client), or the crowd's own actors for a
//     self-flood.
//   - Signing modes (source.go): Pipeline (background signers keep a
//     buffer full: the default), Presign (all before the run), JIT (in the
//     dispatcher), each a Source.
//   - Guard (internal/dialguard, named in safety.go): resolves every target before anything is sent,
//     refuses public addresses, and dials only the pinned ones.
//   - Run (engine.go): a dispatcher waits for each intended time and hands
//     the send to a free worker slot; with MaxInflight slots busy the send
//     is dropped and counted, never delayed. Latency is measured from the
//     intended time (coordinated-omission corrected), service time from the
//     actual send, lateness in between.
//   - Recorders (metrics.go): HDR histograms per worker shard and
//     activity type, merged at each one-second tick and at the end into
//     flood/record's types.
//   - Ladder (ladder.go): rungs of rates stopping at the shoulder.
//   - The checkpoint snapshot (checkpoint.go): a consistent Result of a
//     run still going, for Plan.Checkpoint.
//
// What the engine measured leaves it in flood/record's types: a
// record.Progress each second (Plan.Progress), a record.Result snapshot
// every few seconds (Plan.Checkpoint) and the final record.Result from
// Run. The engine imports flood/record, never the reverse; the record
// (schema, Merge, Gates, Compare, checkpoint files, verdicts) and
// flood/report (live line, tables, Markdown, HTML) leave the engine
// through those values, as vegeta's Attack feeds Metrics.Add.
//
// A command runs a flood like this (errors handled, flags parsed):
//
//	gates, err := record.ParseGates(expects)          // usage error: exit 2
//	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
//	defer stop()
//	pacer, err := flood.NewPacer(arrivals, rate, seed)
//	live := report.NewLive(os.Stderr, isTerminal)
//	res, err := flood.Run(ctx, flood.Plan{
//		Pacer: pacer, Duration: seconds, Warmup: warmup,
//		MaxInflight: maxInflight, Timeout: timeout,
//		Source: source, Transport: flood.NewTransport(maxInflight, timeout, tlsConfig),
//		Progress: live.Update,
//	})                                                // ErrInvalidPlan: exit 2
//	live.Done()
//	rec, err := res.Record(record.Settings{Label: label, Arrivals: arrivals,
//		Mix: mix, Signing: signing, Target: target, Shard: shard})
//	path, err := record.NewRecordFile("out/load").FinalWith(rec, rec) // also after Ctrl-C
//	report.WriteTable(os.Stdout, rec)
//	results, _ := record.CheckGates(rec, gates)
//	os.Exit(flood.ExitCode(nil, results))             // 0 met, 1 missed
//
// A ladder calls Run once per rung through Ladder.Run, with
// Ladder.RungPlan setting the rung's pacer, warm-up and duration.
package flood
