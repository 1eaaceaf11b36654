package archtest

// room is one row of DESIGN.md §2's drawing: a package directory of the module (its
// sub-packages belong to it unless they have a row of their own) and the rooms its non-test
// files may import. A room always imports itself.
type room struct {
	name    string
	imports []string // rooms; everyRoom for a room that measures or drives every other
}

// everyRoom in a row's imports lets the room import any room: the bench and the e2e tests
// drive the whole crowd from outside it.
const everyRoom = "*"

// drawing is DESIGN.md §2's arrows as one table, the allow-list every import between rooms
// must be on. The layout table of docs/contributing.md prints the same rows; change both together.
func drawing() []room {
	return []room{
		// The CLI only: flags -> a Config -> Run. actors, signing and apclient for their leaf
		// types (the world's configuration, the key backends, a URL check), the CA for `crowd ca`, the weather's spec for `--weather`.
		{"cmd/crowd", []string{"loadrun", "pasture", "pasture/tlsca", "pasture/weather", "adminapi", "flood/record", "flood/report", "actors", "signing", "apclient", "internal"}},
		// One load run: the flood, its observers (the audience, live metrics), the record, and
		// the standalone environment (pasture) when no crowd is attached, the weather's spec for a
		// run's timeline.
		{"loadrun", []string{"flood", "flood/traffic", "flood/record", "flood/livemetrics", "flood/scenario", "audience", "adminapi", "pasture", "pasture/fetchback", "pasture/weather", "actors", "signing", "internal"}},
		// An observer of a run from its members' seats: it writes the record's audience section.
		{"audience", []string{"apclient", "adminapi", "flood/record", "internal"}},
		// The engine: it sends requests and hears answers, and feeds the record's collectors.
		{"flood", []string{"flood/record", "internal"}},
		// The traffic: it drafts the world's activities (actors) and signs them (signing,
		// apclient) into the engine's requests, and settles them from the record's outcomes.
		{"flood/traffic", []string{"flood", "flood/record", "apclient", "actors", "signing", "internal"}},
		{"flood/record", []string{"internal"}},
		{"flood/report", []string{"flood/record", "internal"}},
		// Live metrics are a collector of a running flood: they hear the record's values only.
		{"flood/livemetrics", []string{"flood/record", "internal"}},
		{"flood/scenario", []string{"internal"}},
		{"apclient", []string{"signing", "internal"}},
		// The admin API's lookup answer carries the JRD the one client read.
		{"adminapi", []string{"apclient", "internal"}},
		// The environment composes the servers and implements the admin API's handlers.
		{"pasture", []string{"pasture/nameserver", "pasture/tlsca", "pasture/fetchback", "pasture/weather", "inbox", "webfinger", "actors", "apclient", "signing", "adminapi", "internal"}},
		// pasture's concerns, each on its own: DNS and the CA know nothing of the crowd; the
		// fetch-back windows classify the world's URLs and serve their admin routes.
		{"pasture/nameserver", []string{"internal"}},
		{"pasture/tlsca", []string{"internal"}},
		{"pasture/fetchback", []string{"actors", "adminapi", "internal"}},
		// The weather is a value the listeners, the DNS and the CA's handshakes consult: it knows
		// host names only.
		{"pasture/weather", []string{"internal"}},
		// Inboxes fetch and verify through apclient and signing, and implement admin routes; the
		// lookup route answers a crowd account's JRD as the WebFinger handler does, with no round trip.
		{"inbox", []string{"apclient", "actors", "signing", "adminapi", "webfinger", "internal"}},
		// The handlers serve the JRD wire type the client reads.
		{"webfinger", []string{"actors", "apclient", "internal"}},
		{"actors", []string{"signing", "internal"}},
		{"signing", []string{"internal"}},
		// Small leaves any room may use; they import only each other.
		{"internal", []string{"internal"}},
		// Test helpers: only tests, the bench and e2e import them, so no production row names them.
		{"internal/crowdtest", []string{"pasture", "inbox", "actors", "signing", "internal"}},
		{"internal/testkeys", []string{"internal"}},
		{"internal/pipenet", []string{"internal"}},
		{"internal/dialguard/dialguardtest", []string{"internal"}},
		{"flood/record/recordtest", []string{"flood/record", "internal"}},
		{"bench", []string{everyRoom}},
		{"e2e", []string{everyRoom}},
	}
}

// exception is one arrow today's tree makes that the drawing does not draw. The list only
// shrinks: TestDesignArrows fails when no file makes an exception's arrow any more.
type exception struct {
	from, to string // rooms
	why      string
}

// exceptions are the undrawn arrows of today's tree, each with the reason it still stands.
func exceptions() []exception {
	return nil
}
