package inbox

import "github.com/crowdfed/crowd/adminapi"

// The activity log's record, the delivery queue's and the log's totals are
// the admin API's documents (adminapi owns them, so the journal a user greps
// and the API a client reads keep one shape); these names let the inbox's
// code say what it keeps.
type (
	// Entry is one activity in or out: a journal line and an API item.
	Entry = adminapi.Entry
	// Filter selects entries (the API's query, applied here).
	Filter = adminapi.Filter
	// Event is an entry delivered live, with the entries lost before it.
	Event = adminapi.Event
	// Totals counts the entries logged across restarts and rotations.
	Totals = adminapi.Totals
	// Delivery is one queued outgoing activity: its file and its API item.
	Delivery = adminapi.Delivery
)

// Directions and verdicts of an Entry.
const (
	DirIn            = adminapi.DirIn
	DirOut           = adminapi.DirOut
	VerdictAccepted  = adminapi.VerdictAccepted
	VerdictRejected  = adminapi.VerdictRejected
	VerdictDelivered = adminapi.VerdictDelivered
	VerdictRetrying  = adminapi.VerdictRetrying
	VerdictGaveUp    = adminapi.VerdictGaveUp
	VerdictSent      = adminapi.VerdictSent
	VerdictFailed    = adminapi.VerdictFailed
)
