// Package audience watches a server under test (SUT) from its members'
// seats while the crowd floods it: the personas on the SUT are driven
// through the Mastodon client API (v1, which Mastodon, GoToSocial, Akkoma
// and others speak), and what they see is measured.
//
// The pieces, each in its own file:
//
//   - Client (client.go): the client-API subset a load run needs, with
//     errors that say what is wrong (no client API, a refused token, an
//     unknown persona).
//   - Tokens (tokens.go): a bearer token per persona, from flags, a file
//     or the environment.
//   - Shares (shares.go): which crowd actors each persona follows (its own
//     share, disjoint where the crowd is big enough, so a note reaches some
//     homes and not others) and which crowd actors follow each persona.
//   - Setup (setup.go): checks the personas, follows, posts, and waits for
//     the Accepts.
//   - Visibility (visibility.go): for every Create sent to a persona that
//     follows its sender, when its note first appears in that persona's
//     home timeline, and the drain after the flood.
//   - Prober (probe.go): reads each persona's home timeline a few times a
//     second and measures it.
//   - Deliveries (delivery.go): the personas' own posts, delivered by the
//     SUT to the crowd actors that follow them: latency and completeness.
//   - Record (record.go): the flood's record plus a "run" section, a
//     Markdown row, and a per-note log.
//
// It is an observer of a run, never of the flood's internals: it speaks
// HTTP only, imports nothing of the crowd's servers nor the engine, and
// reads and extends the run record through flood/record (whose histogram
// geometry its histograms share, so they merge and compare with the
// flood's).
package audience
