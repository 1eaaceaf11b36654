// Package fetchkind names the kinds of request a crowd origin serves, as
// the fetch-back windows count them (pasture), the admin API carries them
// (adminapi.FetchbackTally.Kinds) and the run record and its report show
// them (flood/record, flood/report). Like histgeom it sits below both
// sides of a run record, which never import each other.
package fetchkind

// The kinds. A key id of the form actor#main-key (every crowd actor's)
// reaches the server as the actor's URL: its fetches count as Actor, and
// Key counts a key served at a URL of its own.
const (
	WebFinger  = "webfinger"  // /.well-known/webfinger
	HostMeta   = "host-meta"  // /.well-known/host-meta(.json)
	NodeInfo   = "nodeinfo"   // /.well-known/nodeinfo, /nodeinfo/2.x
	Actor      = "actor"      // an actor document (and its #main-key)
	Leaver     = "leaver"     // a leaver's actor document: an account made to be deleted (actors.IsLeaverName)
	Key        = "key"        // a key document at a URL of its own
	Object     = "object"     // an object a crowd actor sent (note, like, follow…)
	Collection = "collection" // outbox, followers, following, featured
	Media      = "media"      // an attachment's bytes
	Other      = "other"      // anything else: pages, unknown paths and hosts
)

// All lists the kinds in the order reports show them.
func All() []string {
	return []string{WebFinger, HostMeta, NodeInfo, Actor, Leaver, Key, Object, Collection, Media, Other}
}
