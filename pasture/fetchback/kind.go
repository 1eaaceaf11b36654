package fetchback

import (
	"net/http"
	"path"
	"strings"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/fetchkind"
)

// isMediaSegment says whether a path segment under /users/{name}/ (or at
// the root) leads to an attachment's bytes.
func isMediaSegment(s string) bool { return s == "media" || s == "attachments" || s == "files" }

// isMediaExt says whether a file name ending makes a path media wherever it
// lies: a SUT downloads images by the URL a Document names.
func isMediaExt(ext string) bool {
	switch strings.ToLower(ext) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".mp4", ".webm", ".mp3", ".ogg":
		return true
	}
	return false
}

// isKeySegment says whether the last segment of a path names a key served
// at a URL of its own.
func isKeySegment(s string) bool { return s == "main-key" || s == "publickey" || s == "key" }

// classifyFetch says what kind of document a request for urlPath asks for
// (fetchkind.All), and for an object, the object's kind (the segment
// under /users/{name}/: "notes", "likes", "follows"…). It is the one place
// that knows the shape of the crowd's URLs for the fetch-back tally: a new
// kind of URL is a line here. Any /users/{name}/{segment}/{id} that is not
// media or a collection is an object, so a new object kind is counted (and
// attributed by its segment) without a change.
func classifyFetch(urlPath string) (kind, object string) {
	p := strings.Trim(urlPath, "/")
	if isMediaExt(path.Ext(p)) {
		return fetchkind.Media, ""
	}
	seg := strings.Split(p, "/")
	switch {
	case p == ".well-known/webfinger":
		return fetchkind.WebFinger, ""
	case p == ".well-known/host-meta" || p == ".well-known/host-meta.json":
		return fetchkind.HostMeta, ""
	case p == ".well-known/nodeinfo" || seg[0] == "nodeinfo":
		return fetchkind.NodeInfo, ""
	case isMediaSegment(seg[0]) && len(seg) > 1:
		return fetchkind.Media, ""
	case seg[0] == "actor": // the instance actor: /actor, /actor/outbox, /actor/collections/…
		if len(seg) == 1 {
			return fetchkind.Actor, ""
		}
		return underActor(seg[1:])
	case seg[0] == "users" && len(seg) >= 2 && seg[1] != "":
		switch {
		case len(seg) == 2 && actors.IsLeaverName(seg[1]):
			// An account made to be deleted: counted apart, so a run shows
			// whether the SUT fetched the (gone) account a Delete named.
			return fetchkind.Leaver, ""
		case len(seg) == 2:
			return fetchkind.Actor, ""
		}
		return underActor(seg[2:])
	}
	return fetchkind.Other, ""
}

// underActor classifies the segments after an actor's path.
func underActor(rest []string) (kind, object string) {
	switch {
	case len(rest) == 1 && (rest[0] == "outbox" || rest[0] == "followers" || rest[0] == "following"):
		return fetchkind.Collection, ""
	case rest[0] == "collections":
		return fetchkind.Collection, ""
	case len(rest) == 1 && isKeySegment(rest[0]):
		return fetchkind.Key, ""
	case isMediaSegment(rest[0]) && len(rest) > 1:
		return fetchkind.Media, ""
	case len(rest) >= 2 && rest[0] != "" && rest[0] != "inbox" && rest[1] != "":
		return fetchkind.Object, rest[0]
	}
	return fetchkind.Other, ""
}

// creditOf names the activity type whose sends made the SUT fetch urlPath,
// answered status (an adminapi.Credit constant), or "" for a fetch no one type
// causes (an actor's key, WebFinger, NodeInfo, a collection). The object's
// id says which builder made it: a thread's parents (marked Thread) and
// replies are Reply's, an attachment or a media note Media's, a note by a
// leaver the unseen note an Announce boosted; whatever answered 410 was
// fetched for a Delete (a deleted note or account).
func creditOf(urlPath string, status int) string {
	kind, object := classifyFetch(urlPath)
	switch {
	case kind == fetchkind.Media:
		return adminapi.CreditMedia
	case (kind == fetchkind.Leaver || kind == fetchkind.Object) && status == http.StatusGone:
		return adminapi.CreditDelete
	case kind == fetchkind.Leaver:
		return adminapi.CreditAnnounce // its note was boosted: the SUT meets its author
	case kind != fetchkind.Object:
		return ""
	}
	seg := strings.Split(strings.Trim(urlPath, "/"), "/")
	if seg[0] != "users" || len(seg) < 4 {
		return "" // the instance actor sends no objects
	}
	suffix := strings.Join(seg[4:], "/")
	switch object {
	case "likes", "follows", "announces":
		if suffix == "undo" {
			return adminapi.CreditUndo
		}
		return map[string]string{"likes": adminapi.CreditLike, "follows": adminapi.CreditFollow,
			"announces": adminapi.CreditAnnounce}[object]
	case "notes":
	default:
		return ""
	}
	switch {
	case suffix == "delete":
		return adminapi.CreditDelete
	case strings.HasPrefix(suffix, "updates/"):
		return adminapi.CreditUpdate
	case actors.IsLeaverName(seg[1]):
		return adminapi.CreditAnnounce
	}
	spec, err := actors.ParseNoteToken(seg[3])
	switch {
	case err != nil:
		return ""
	case spec.Media.Count > 0:
		return adminapi.CreditMedia
	case spec.InReplyTo != "" || spec.Thread:
		return adminapi.CreditReply
	}
	return adminapi.CreditCreate
}
