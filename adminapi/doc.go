// Package adminapi is the crowd's admin API as a contract: its routes (one
// table, routes.go), the documents they take and answer (the wire types), and
// one typed Client that the CLI, a flood attached to a running crowd and the
// audience use to call it.
//
// The handlers are not here: inbox and pasture implement the routes, serving
// these types at these paths (pasture's admin server mounts inbox's routes
// behind its Host/Origin guard). The arrow points from them to this package,
// never back, so a client of the API links no server code and the servers
// share one definition of what they answer.
//
// Where a wire document is also a server's own record, this package owns the
// type and the server uses it as its record, rather than keeping a twin and
// copying field by field: the activity log's Entry is both what the stream
// and /api/activities answer and the journal line inbox writes to
// activity.jsonl, a queued Delivery is both the file inbox persists and an
// item of /api/deliveries, and Totals is both the log's checkpoint and the
// totals answer. One type keeps the file a user greps and the API a client
// reads in the same shape. Where the server's record carries more than the
// API shows (the follow graph's Relation keeps the whole Follow for the
// Accept; the world holds private keys), the wire type here is the smaller
// document and the handler converts.
//
// Errors are JSON {"error": reason} with the HTTP status chosen at the
// handler; the Client returns them as *Error carrying both.
package adminapi
