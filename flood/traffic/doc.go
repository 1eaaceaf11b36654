// Package traffic is what a flood sends, apart from when and how (the
// engine, package flood): it drafts the crowd's activities and signs them
// into the engine's Prepared requests, as vegeta's Targeter feeds its
// Attacker. It imports the engine's small interfaces, never the reverse.
//
// The parts, each in its own file:
//
//   - Activities (activity.go, verbs.go): the Generator draws Creates,
//     Likes, Follows and the vocabulary (boosts, Undos, Updates, Deletes,
//     replies) by a weighted Mix, senders uniform or Zipf, personas
//     uniform; a Registrar (registrar.go) records the Follows in the
//     crowd's graph off the send path.
//   - Signing modes (modes.go, source.go): Pipeline (background signers
//     keep a buffer full: the default), Presign (all before the run), JIT
//     (in the dispatcher), each a flood.Source.
//   - Prepare (prepare.go): a draft signed into a flood.Prepared, honest
//     with a scheme or forged as its draft says.
//   - Ticket (ticket.go): a request's bookkeeping, its Prepared.Token; it
//     is the engine's Fallback (the double knock, knock.go) and Holder (a
//     Delete waits for its object's deletion, deletions.go), and Settle
//     hands the engine's settlements back to the crowd's state.
//   - Outboxes (outbox.go): an OutboxFeed hands the Creates that left, in
//     batches, to the crowd's outboxes.
//   - Personas (personas.go): the targets, discovered by WebFinger and
//     signed fetches of their actors and outboxes (through apclient), or
//     the crowd's own actors for a self-flood.
//   - Forgeries (tamper.go): a share of requests broken on purpose, and
//     what the SUT made of them.
package traffic
