package adminapi

import (
	"context"
	"net/url"
	"time"
)

// The fetch-back routes: a run opens a window before its first send, ends
// it after its last answer and closes it after a grace period; every GET or
// HEAD a crowd origin serves while a window is open is counted in it, by
// kind (internal/fetchkind), with its latency as served, its status class and
// whether it was signed. Requests served after the window ended are counted
// apart (after_end). Every open window counts every request: two runs at
// once each see the other's fetches.
const (
	// RouteFetchbackOpen opens a window (a FetchbackOpenRequest) and
	// answers its FetchbackWindow. More than MaxFetchbackWindows open at
	// once is 409.
	RouteFetchbackOpen Route = "POST /api/fetchback"

	// RouteFetchbackEnd marks the end of the run a window counts for (a
	// FetchbackRef); requests served from then on are after_end. It answers
	// the FetchbackTally so far; an unknown id is 404. Ending twice keeps
	// the first end.
	RouteFetchbackEnd Route = "POST /api/fetchback/end"

	// RouteFetchbackClose closes a window (a FetchbackRef) and answers its
	// final FetchbackTally; the window is forgotten. An unknown id is 404.
	RouteFetchbackClose Route = "POST /api/fetchback/close"

	// RouteFetchbacks answers []FetchbackTally: every open window, or with
	// ?id= that one (an unknown id is 404).
	RouteFetchbacks Route = "GET /api/fetchback"
)

// ParamID names a fetch-back window in RouteFetchbacks' query.
const ParamID = "id"

// MaxFetchbackWindows bounds the windows open at once (each holds a
// histogram per kind); a window ended long ago, or opened more than a day
// ago, gives way to a new one.
const MaxFetchbackWindows = 16

// The activity types a fetch is credited to (FetchbackTally.Credits),
// spelled as the run record names its types: the type whose sends made
// the fetched object (see docs/flooding.md, "What the SUT fetches back").
const (
	CreditCreate   = "Create"   // a plain note's fetch (its Create embeds it)
	CreditReply    = "Reply"    // a reply's note, or a thread's parent made for one
	CreditMedia    = "Media"    // an attachment's download, or a media note's fetch
	CreditAnnounce = "Announce" // a boost, or the unseen note it boosts and its author (a leaver not yet deleted)
	CreditLike     = "Like"     // a Like
	CreditFollow   = "Follow"   // a Follow
	CreditUndo     = "Undo"     // an Undo (served at the undone activity's id + /undo)
	CreditDelete   = "Delete"   // anything answered 410 (a deleted note, a deleted leaver), or a Delete itself
	CreditUpdate   = "Update"   // an Update of a note
)

// FetchbackOpenRequest is RouteFetchbackOpen's body.
type FetchbackOpenRequest struct {
	// Label names the run, for a person reading the open windows.
	Label string `json:"label"`
}

// FetchbackRef names a window (RouteFetchbackEnd, RouteFetchbackClose).
type FetchbackRef struct {
	ID string `json:"id"`
}

// FetchbackWindow is one window: when it opened and, once the run ended,
// when that was.
type FetchbackWindow struct {
	ID     string     `json:"id"`
	Label  string     `json:"label"`
	Opened time.Time  `json:"opened"`
	Ended  *time.Time `json:"ended,omitempty"`
}

// FetchbackTally is what a window counted.
type FetchbackTally struct {
	FetchbackWindow
	// At is when the tally was read.
	At time.Time `json:"at"`
	// Kinds are the counts by kind (internal/fetchkind); a kind with none is
	// left out.
	Kinds map[string]FetchbackKind `json:"kinds"`
	// Objects counts the object fetches by the object's kind, the path
	// segment under /users/{name}/ ("notes", "likes", "follows"…).
	Objects map[string]int64 `json:"objects,omitempty"`
	// Late counts the fetches served after the window closed, for
	// FetchbackLateLinger after its close: what the run's grace missed
	// (a closed window's tally only).
	Late int64 `json:"late,omitempty"`
	// Credits counts the fetches credited to the activity type whose
	// object they fetched (the Credit constants): a fetch no one type causes (an
	// actor's key, WebFinger, NodeInfo, a collection) is in none.
	Credits map[string]int64 `json:"credits,omitempty"`
}

// FetchbackLateLinger is how long the crowd keeps counting a closed
// window's late fetches: a SUT's media downloads may go on for a minute
// after a flood.
const FetchbackLateLinger = 10 * time.Minute

// FetchbackKind is the tally of one kind of request.
type FetchbackKind struct {
	// Fetches counts every request of the kind, AfterEnd those of them
	// served after the window ended.
	Fetches  int64 `json:"fetches"`
	AfterEnd int64 `json:"after_end"`
	// Signed counts those that carried an HTTP signature (Signature or
	// Signature-Input): authorized fetch. Fetches - Signed were unsigned.
	Signed int64 `json:"signed"`
	// Status counts the answers by class: "2xx", "3xx", "404" (no such
	// document), "410" (gone: a deleted object's or actor's Tombstone),
	// "4xx" (any other), "5xx", and "none" for no answer (a reset or a black
	// hole of the weather).
	Status map[string]int64 `json:"status"`
	// Latency is the time to serve each request, from its headers read to
	// its answer written, in µs: an HdrHistogram V2 compressed, base64
	// encoding with the flood's geometry, so it merges with the record's;
	// empty where the reader asked for counts only (the live panel's).
	Latency string `json:"latency_hdr"`
}

// OpenFetchback calls RouteFetchbackOpen.
func (c *Client) OpenFetchback(ctx context.Context, label string) (FetchbackWindow, error) {
	var w FetchbackWindow
	return w, c.call(ctx, RouteFetchbackOpen, nil, FetchbackOpenRequest{Label: label}, &w)
}

// EndFetchback calls RouteFetchbackEnd.
func (c *Client) EndFetchback(ctx context.Context, id string) (FetchbackTally, error) {
	var t FetchbackTally
	return t, c.call(ctx, RouteFetchbackEnd, nil, FetchbackRef{ID: id}, &t)
}

// CloseFetchback calls RouteFetchbackClose.
func (c *Client) CloseFetchback(ctx context.Context, id string) (FetchbackTally, error) {
	var t FetchbackTally
	return t, c.call(ctx, RouteFetchbackClose, nil, FetchbackRef{ID: id}, &t)
}

// Fetchbacks calls RouteFetchbacks: every open window, or id's ("" for all).
func (c *Client) Fetchbacks(ctx context.Context, id string) ([]FetchbackTally, error) {
	var q url.Values
	if id != "" {
		q = url.Values{ParamID: {id}}
	}
	var ts []FetchbackTally
	return ts, c.call(ctx, RouteFetchbacks, q, nil, &ts)
}
