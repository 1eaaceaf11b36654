package inbox

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/internal/dialguard"
	"github.com/crowdfed/crowd/signing"
)

// AdminRoutes adds the inbox's routes of the admin API with handle
// (pasture.Config.Admin, or an http.ServeMux's Handle): RouteActivities,
// RouteStream, RouteTotals, RouteFollows, RouteFollowing, RoutePrune, RouteSend,
// RouteLookup, RouteDeliveries, RouteChanges, RouteUnfollow, RouteReactions and
// RouteRecordReactions, as adminapi documents them. Errors are
// JSON {"error": "..."} with 400 for a bad request, 403 for a send to a
// public address without allow_public_target, 404 for an unknown crowd
// actor and 502 when a remote could not be reached.
func (in *Inbox) AdminRoutes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteActivities), http.HandlerFunc(in.handleActivities))
	handle(string(adminapi.RouteStream), http.HandlerFunc(in.handleStream))
	handle(string(adminapi.RouteTotals), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t, seq := in.alog.TotalsAt()
		adminapi.WriteJSON(w, http.StatusOK, adminapi.TotalsReply{Totals: t, Seq: seq})
	}))
	handle(string(adminapi.RouteFollows), http.HandlerFunc(in.handleFollows))
	handle(string(adminapi.RouteFollowing), http.HandlerFunc(in.handleFollowing))
	handle(string(adminapi.RouteSend), http.HandlerFunc(in.handleSend))
	handle(string(adminapi.RouteOutbox), http.HandlerFunc(in.handleOutbox))
	handle(string(adminapi.RouteLookup), http.HandlerFunc(in.handleLookup))
	handle(string(adminapi.RouteDeliveries), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		adminapi.WriteJSON(w, http.StatusOK, in.Pending())
	}))
	handle(string(adminapi.RoutePrune), http.HandlerFunc(in.handlePrune))
	in.vocabRoutes(handle)
	in.reactionRoutes(handle)
}

// writeError answers err in the admin API's error shape, with the status its sentinel chooses.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, adminapi.ErrBodyTooLarge): // also a bad request: the more telling status wins
		status = http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrBadRequest):
		status = http.StatusBadRequest
	case errors.Is(err, errUnknownActor):
		status = http.StatusNotFound
	case errors.Is(err, dialguard.ErrPublicTarget):
		status = http.StatusForbidden
	case errors.Is(err, ErrTarget), errors.Is(err, ErrUndelivered):
		status = http.StatusBadGateway
	}
	adminapi.WriteError(w, status, err.Error())
}

func (in *Inbox) handleActivities(w http.ResponseWriter, r *http.Request) {
	q, err := adminapi.ParseActivitiesQuery(r.URL.Query())
	if err != nil {
		writeError(w, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	if err := in.checkFilterActor(q.Filter.Actor); err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, in.alog.Latest(q.Limit, q.Filter))
}

// checkFilterActor refuses a filter's actor that could match nothing, so
// that a tail does not wait forever for it, nor a query answer nothing,
// with no word why: an acct with no name or no host; a URL without its
// scheme; a crowd actor's name alone (a bare word is a host); a host of the
// crowd's pattern past its origins (flood99.test of 20); and, on one of
// the crowd's hosts, a name (acct, or a /users/NAME URL) no actor has. An
// acct or URL of another host, and another host alone, pass: the SUT's
// names are its own.
func (in *Inbox) checkFilterActor(want string) error {
	if want == "" {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s=%q: %s, so nothing would match", ErrBadRequest, adminapi.ParamActor, want, fmt.Sprintf(format, args...))
	}
	if strings.Contains(want, "://") {
		u, err := url.Parse(want)
		if err != nil || u.Host == "" {
			return bad("not an actor URL")
		}
		if err := in.checkFilterHost(u.Host, bad); err != nil {
			return err
		}
		o, crowd := in.world.Origin(strings.ToLower(u.Hostname()))
		switch {
		case !crowd:
			return nil // another server's: its URLs are its own
		case !strings.EqualFold(u.Scheme, "https"):
			return bad("the crowd's actors are https://%s/users/NAME", o.Host)
		case strings.Trim(u.Path, "/") == "":
			return bad("a URL names an actor (https://%s/users/NAME); give the host alone for all of them", o.Host)
		}
		name, ok := strings.CutPrefix(strings.TrimSuffix(u.Path, "/"), "/users/")
		if ok && name != "" && !strings.Contains(name, "/") {
			// As given: a URL is matched by its path, which keeps its case.
			if _, ok := o.Actor(name); !ok {
				return bad("%s has no actor %q (%s)", o.Host, name, actorNamesHint(o))
			}
		}
		return nil
	}
	user, host, isAcct := strings.Cut(strings.TrimPrefix(adminapi.TrimAcct(want), "@"), "@")
	if !isAcct {
		switch {
		case strings.Contains(user, "/"):
			return bad("neither name@host, an actor URL (https://…) nor a host")
		case in.isCrowdActorName(user):
			return bad("%s is an actor's name: give name@host (%s@%s), or a host alone", user, user, in.world.Origins[0].Host)
		}
		return in.checkFilterHost(user, bad)
	}
	if user == "" || host == "" || strings.Contains(host, "@") {
		return bad("an account is name@host")
	}
	if err := in.checkFilterHost(host, bad); err != nil {
		return err
	}
	o, ok := in.world.Origin(strings.ToLower(host))
	if !ok {
		return nil
	}
	if _, ok := o.Actor(strings.ToLower(user)); !ok {
		return bad("%s has no actor %q (%s)", o.Host, user, actorNamesHint(o))
	}
	return nil
}

// checkFilterHost refuses a host (host[:port]) the log never names: with a
// trailing dot (the log's hosts have none), one of the crowd's with a port
// (its actors' ids have none), or of the crowd's own pattern but no origin
// of its world (flood99.test of 20, flood03.test for flood3.test): a typo
// of one of them. Another server's host may have a port: its ids keep it.
func (in *Inbox) checkFilterHost(hostport string, bad func(string, ...any) error) error {
	name, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		name, port = h, p
	}
	if strings.HasSuffix(name, ".") {
		return bad("the log names hosts without the trailing dot: give %s", strings.TrimSuffix(hostport, "."))
	}
	cfg := in.world.Config
	_, crowd := in.world.Origin(strings.ToLower(name))
	n, fits := cfg.OriginNumber(name)
	switch {
	case port != "" && (crowd || fits):
		return bad("the crowd's hosts are named without a port: give %s", name)
	case fits && (n < 1 || n > cfg.Origins || !strings.EqualFold(fmt.Sprintf(cfg.Domain, n), name)):
		hosts := in.world.Hosts()
		return bad("%s is no origin of this crowd (it serves %s … %s)", name, hosts[0], hosts[len(hosts)-1])
	}
	return nil
}

// isCrowdActorName reports whether name is the name of a person of the
// crowd's first origin (every origin has the same names); an origin's
// host, its instance actor's name, is a host.
func (in *Inbox) isCrowdActorName(name string) bool {
	a, ok := in.world.Origins[0].Actor(strings.ToLower(name))
	return ok && a.Kind == actors.KindPerson
}

// actorNamesHint names how many actors an origin has and the first of
// them, as "its 50 actors: alice, bob, carol, …".
func actorNamesHint(o *actors.Origin) string {
	n := o.NumActors()
	names := make([]string, 0, 4)
	for i := 0; i < n && i < 3; i++ {
		names = append(names, actors.ActorName(i))
	}
	if n > 3 {
		names = append(names, "…")
	}
	if n == 1 {
		return "its one actor: " + names[0]
	}
	return fmt.Sprintf("its %d actors: %s", n, strings.Join(names, ", "))
}

// handleStream follows the log as Server-Sent Events: "activity" events
// carry an Entry (its Seq as the event id), "lost" events say how many
// entries this client missed by reading too slowly. A comment line every
// 15 s keeps proxies from closing the stream.
func (in *Inbox) handleStream(w http.ResponseWriter, r *http.Request) {
	q, err := adminapi.ParseStreamQuery(r.URL.Query())
	if err != nil {
		writeError(w, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	if err := in.checkFilterActor(q.Filter.Actor); err != nil {
		writeError(w, err)
		return
	}
	backlog, f := q.Backlog, q.Filter
	sub := in.alog.Subscribe(f, 256)
	defer sub.Close()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var last uint64
	enc := newLineEncoder() // the journal's JSON, its newline ending the data line
	send := func(e Entry) bool {
		b, err := enc.line(&e, false)
		if err != nil {
			return true
		}
		last = e.Seq
		_, err = fmt.Fprintf(w, "id: %d\nevent: activity\ndata: %s\n", e.Seq, b)
		return err == nil
	}
	if backlog > 0 {
		for _, e := range in.alog.Latest(backlog, f) {
			if !send(e) {
				return
			}
		}
	}
	if rc.Flush() != nil {
		return
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case ev, ok := <-sub.C():
			if !ok {
				return
			}
			if ev.Entry.Seq <= last {
				continue // already sent as backlog
			}
			if ev.Lost > 0 {
				if _, err := fmt.Fprintf(w, "event: lost\ndata: {\"lost\":%d}\n\n", ev.Lost); err != nil {
					return
				}
			}
			if !send(ev.Entry) {
				return
			}
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-in.done:
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// Follows lists the relations of every crowd actor that has any (or of
// the one actor named, acct or id, with or without relations).
func (in *Inbox) Follows(actor string) ([]adminapi.FollowsInfo, error) {
	list := in.graphActors()
	if actor != "" {
		a, err := in.LocalActor(actor)
		if err != nil {
			return nil, err
		}
		list = []*actors.Actor{a}
	}
	out := []adminapi.FollowsInfo{}
	for _, a := range list {
		fi := adminapi.FollowsInfo{Actor: a.ID, Acct: a.Acct(),
			Followers: WireRelations(in.world.Graph.Followers(a.ID)), Following: WireRelations(in.world.Graph.Following(a.ID))}
		if actor == "" && len(fi.Followers) == 0 && len(fi.Following) == 0 {
			continue
		}
		out = append(out, fi)
	}
	return out, nil
}

// wireRelation is r as the admin API shows it: without the whole Follow,
// which the graph keeps for the Accept.
func wireRelation(r actors.Relation) adminapi.Relation {
	return adminapi.Relation{Local: r.Local, Remote: r.Remote, FollowID: r.FollowID, State: r.State, Since: r.Since}
}

// WireRelations is rs as the admin API shows them (an empty list, never
// nil): the one conversion from the follow graph to the wire.
func WireRelations(rs []actors.Relation) []adminapi.Relation {
	out := make([]adminapi.Relation, len(rs))
	for i, r := range rs {
		out[i] = wireRelation(r)
	}
	return out
}

func (in *Inbox) handleFollows(w http.ResponseWriter, r *http.Request) {
	if err := adminapi.CheckQuery(r.URL.Query(), adminapi.ParamActor); err != nil {
		writeError(w, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	fi, err := in.Follows(r.URL.Query().Get(adminapi.ParamActor))
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, fi)
}

// errUnknownActor marks a name that is no crowd actor (404).
var errUnknownActor = errors.New("no such crowd actor")

// LocalActor finds a crowd actor by acct ("alice@flood3.test", with or
// without "acct:" or "@") or by id. Errors say which it is not.
func (in *Inbox) LocalActor(name string) (*actors.Actor, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return nil, fmt.Errorf("%w: no actor named", ErrBadRequest)
	}
	if strings.Contains(name, "://") {
		if a, ok := in.crowdActor(name); ok {
			return a, nil
		}
		return nil, fmt.Errorf("%w: %s", errUnknownActor, name)
	}
	user, host, ok := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(name, "acct:"), "@"), "@")
	if !ok {
		return nil, fmt.Errorf("%w: %q is neither name@host nor an actor URL", ErrBadRequest, name)
	}
	o, ok := in.world.Origin(host)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not an origin of this crowd", errUnknownActor, host)
	}
	a, ok := o.Actor(user)
	if !ok {
		return nil, fmt.Errorf("%w: no actor %q on %s", errUnknownActor, user, host)
	}
	return a, nil
}

// RegisterFollowing records req as pending, unless the same Follow is
// already known (its Accept may have arrived first: it is not reset).
func (in *Inbox) RegisterFollowing(req adminapi.FollowingRequest) (actors.Relation, error) {
	a, err := in.LocalActor(req.Local)
	if err != nil {
		return actors.Relation{}, err
	}
	if err := absoluteURL("remote", req.Remote); err != nil {
		return actors.Relation{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if req.FollowID == "" {
		return actors.Relation{}, fmt.Errorf("%w: follow_id is empty", ErrBadRequest)
	}
	g := in.world.Graph
	if r, ok := g.FollowingByRemote(a.ID, req.Remote); ok && r.FollowID == req.FollowID {
		return r, nil
	}
	if err := g.AddFollowing(a.ID, req.Remote, req.FollowID); err != nil {
		return actors.Relation{}, err
	}
	r, _ := g.FollowingByRemote(a.ID, req.Remote)
	return r, nil
}

func (in *Inbox) handleFollowing(w http.ResponseWriter, r *http.Request) {
	var req adminapi.FollowingRequest
	if err := adminapi.DecodeBody(w, r, 0, &req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON {local, remote, follow_id}: %w", ErrBadRequest, err))
		return
	}
	rel, err := in.RegisterFollowing(req)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, wireRelation(rel))
}

// Prune lists, and unless req.DryRun removes, the crowd's own Follows
// pending for longer than req.OlderThan: Follows a SUT never answered,
// which would keep the pair from being followed again.
func (in *Inbox) Prune(req adminapi.PruneRequest) (adminapi.PruneResult, error) {
	d, err := time.ParseDuration(strings.TrimSpace(req.OlderThan))
	if err != nil || d < 0 {
		return adminapi.PruneResult{}, fmt.Errorf("%w: older_than %q: want a duration of 0 or more, e.g. 1h", ErrBadRequest, req.OlderThan)
	}
	stale, removed, err := in.world.Graph.PrunePending(in.cfg.Now().Add(-d), req.DryRun)
	return adminapi.PruneResult{Stale: WireRelations(stale), Removed: removed}, err
}

func (in *Inbox) handlePrune(w http.ResponseWriter, r *http.Request) {
	var req adminapi.PruneRequest
	if err := adminapi.DecodeStrictBody(w, r, 0, &req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON {older_than, dry_run}: %w", ErrBadRequest, err))
		return
	}
	res, err := in.Prune(req)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, res)
}

// unanswered is the error of a send whose post failed: ErrUndelivered
// when the inbox did not answer, the failure itself (a 500) when the post
// could not be made (the inbox was checked before: a signing failure).
func unanswered(err error) error {
	if errors.Is(err, errPermanent) {
		return err
	}
	return fmt.Errorf("%w: %v", ErrUndelivered, err)
}

// target is a resolved recipient.
type target struct {
	id, inbox, sharedInbox, handle string
}

// checkHost refuses, before anything is sent to it, a host outside the
// crowd that g does not let through (a public address, or no address).
func (in *Inbox) checkHost(ctx context.Context, g *dialguard.Guard, rawURL string) error {
	host := actors.HostOf(rawURL)
	if _, ok := in.world.Origin(host); ok {
		return nil // the crowd's own origins are served in-process or by this crowd
	}
	if cfg := in.world.Config; cfg.Origins > 0 {
		if n, fits := cfg.OriginNumber(host); fits && (n < 1 || n > cfg.Origins) {
			// Named as the crowd's origins are, but past them: a slip, not
			// a name for the resolver.
			hosts := in.world.Hosts()
			return fmt.Errorf("%w: %s is no origin of this crowd (it serves %s … %s)", ErrTarget, host, hosts[0], hosts[len(hosts)-1])
		}
	}
	if err := g.CheckURL(ctx, rawURL); err != nil {
		if errors.Is(err, dialguard.ErrPublicTarget) {
			return err
		}
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			// The crowd's own DNS answers the SUT, not the crowd: a
			// --dns-record is no help here, which users expect it to be.
			return fmt.Errorf("%w: %v (the crowd looks names up with its machine's resolver, not with its own DNS's --dns-record: the name must resolve where the crowd runs: a compose network, or /etc/hosts)", ErrTarget, err)
		}
		return fmt.Errorf("%w: %v", ErrTarget, err)
	}
	return nil
}

// resolveTarget finds to's actor id and inboxes: WebFinger for an acct,
// then the actor document (signed GET by from's instance actor). Every
// host is checked with g before it is contacted.
func (in *Inbox) resolveTarget(ctx context.Context, g *dialguard.Guard, from *actors.Actor, to string) (target, error) {
	to = strings.TrimSpace(to)
	var t target
	if strings.Contains(to, "://") {
		t.id = to
	} else {
		user, host, err := apclient.ParseAcct(to)
		if err != nil {
			return t, fmt.Errorf("%w: to %q is neither an account nor an actor URL: %v", ErrBadRequest, to, err)
		}
		if err := in.checkHost(ctx, g, "https://"+host+"/"); err != nil {
			return t, err
		}
		jrd, err := in.webfinger(ctx, to)
		if err != nil {
			return t, fmt.Errorf("%w: %v", ErrTarget, err)
		}
		t.id, t.handle = jrd.Self(), "@"+user+"@"+strings.ToLower(host)
	}
	if err := in.checkHost(ctx, g, t.id); err != nil {
		return t, err
	}
	doc, err := in.fetchActor(ctx, from.Origin.Instance, t.id)
	if err != nil {
		return t, fmt.Errorf("%w: %v", ErrTarget, err)
	}
	if doc.ID != "" && doc.ID != t.id {
		return t, fmt.Errorf("%w: the document at %s has id %s", ErrTarget, t.id, doc.ID)
	}
	t.inbox, t.sharedInbox = doc.Inbox, doc.SharedInbox
	if t.handle == "" {
		t.handle = "@" + doc.PreferredUsername + "@" + actors.HostOf(t.id)
	}
	if t.inbox == "" && t.sharedInbox == "" {
		return t, fmt.Errorf("%w: %s names no inbox", ErrTarget, t.id)
	}
	return t, nil
}

func randSeq() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) >> 1
}

// marshalActivity encodes an activity compactly, HTML left readable.
func marshalActivity(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// SendActivity carries out req: resolves the sender and the target,
// builds the activity with the actors' builders (a Follow is registered
// as pending first, so its Accept finds it; an Undo undoes the sender's
// Follow of the target and, once answered 2xx, forgets it; a generated
// Create, once answered, goes to the sender's outbox: an object given in
// req is not one the crowd can regenerate, so it does not), signs it and
// delivers it now. Errors wrap ErrBadRequest, ErrTarget, ErrUndelivered or
// name the unknown sender; a non-2xx answer is a result, not an error.
func (in *Inbox) SendActivity(ctx context.Context, req adminapi.SendRequest) (adminapi.SendResult, error) {
	from, err := in.LocalActor(req.From)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	o, err := parseSendOrder(req)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	if req.Inbox != "" {
		if err := httpURL("inbox", req.Inbox); err != nil {
			return adminapi.SendResult{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
	}
	// One guard per send, which checks each host before it is contacted
	// (the post resolves the name again as it dials).
	g := dialguard.NewGuard(dialguard.GuardOptions{AllowPublic: req.AllowPublicTarget, Resolve: in.cfg.ResolveTarget})
	t, err := in.resolveTarget(ctx, g, from, req.To)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	inbox := req.Inbox
	if inbox == "" {
		inbox = t.inbox
		if (o.typ == "Create" && t.sharedInbox != "") || inbox == "" {
			inbox = t.sharedInbox
		}
		if err := httpURL("inbox", inbox); err != nil {
			return adminapi.SendResult{}, fmt.Errorf("%w: the actor %s names an inbox that cannot be delivered to: %v", ErrTarget, t.id, err)
		}
	}
	if err := in.checkHost(ctx, g, inbox); err != nil {
		return adminapi.SendResult{}, err
	}
	act, sentNote, err := in.draftSend(from, t, o, req.Object)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	body, err := marshalActivity(act)
	if err != nil {
		return adminapi.SendResult{}, err
	}
	if req.Tamper != "" {
		res, err := in.sendForged(ctx, from, t.id, inbox, body, req.Tamper)
		in.takeBackFollow(act, from, t.id, res, err)
		return res, err
	}
	res, err := in.sendTo(ctx, from, t.id, inbox, body, o.scheme)
	in.takeBackFollow(act, from, t.id, res, err)
	if err != nil {
		return res, unanswered(err)
	}
	// Answered, whatever the status: the Create left, so the outbox lists it.
	if sentNote != nil {
		if err := in.world.RecordSent([]actors.SentNote{*sentNote}); err != nil {
			return res, err
		}
	}
	if o.typ == "Undo" && res.Status >= 200 && res.Status < 300 {
		if _, err := in.world.Graph.RemoveFollowing(from.ID, t.id); err != nil {
			return res, err
		}
	}
	return res, nil
}

// takeBackFollow forgets the pending Follow draftSend registered for act
// when the target did not take it: answered non-2xx, or never reached (no
// connection was made). Left pending, it would read as a Follow awaiting
// its Accept, keep a flood from following that pair and wait for a prune.
// A send that failed after the request may have arrived (a timeout) keeps
// it: an Accept may still come. An Accept that came meanwhile is kept too.
func (in *Inbox) takeBackFollow(act any, from *actors.Actor, remote string, res adminapi.SendResult, err error) {
	f, ok := act.(actors.Activity)
	if !ok || f.Type != "Follow" {
		return
	}
	refused := err == nil && (res.Status < 200 || res.Status > 299)
	if !refused && !neverSent(err) {
		return
	}
	graph := in.world.Graph
	if rel, ok := graph.FollowingByRemote(from.ID, remote); ok && rel.FollowID == f.ID {
		if _, err := graph.RemovePending(rel); err != nil {
			in.log.Warn("a Follow the target did not take stays pending", zap.String("follow", f.ID), zap.Error(err))
		}
	}
}

// neverSent reports whether err is a post's failure before any of the
// request could reach the target: no connection made, or a TLS handshake
// that failed (a certificate the crowd does not trust, a name it does not
// match). A timeout or a reset after the request went may have delivered it.
func neverSent(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var hostname x509.HostnameError
	var authority x509.UnknownAuthorityError
	return (errors.As(err, &op) && op.Op == "dial") || errors.As(err, &verify) || errors.As(err, &header) ||
		errors.As(err, &hostname) || errors.As(err, &authority)
}

// sendOrder is a SendRequest checked: the activity's type in its canonical case, the
// signature scheme, and a Like's object.
type sendOrder struct {
	typ    string // Follow, Undo, Create or Like
	scheme signing.Scheme
	likeOf string
}

// parseSendOrder checks what req asks before anything is resolved or sent; errors wrap
// ErrBadRequest.
func parseSendOrder(req adminapi.SendRequest) (sendOrder, error) {
	var o sendOrder
	for _, t := range []string{"Follow", "Undo", "Create", "Like"} {
		if strings.EqualFold(req.Type, t) {
			o.typ = t
		}
	}
	if o.typ == "" {
		return o, fmt.Errorf("%w: type %q is not Follow, Undo, Create or Like", ErrBadRequest, req.Type)
	}
	if req.Tamper != "" && o.typ != "Create" && o.typ != "Like" {
		return o, fmt.Errorf("%w: a forged send (tamper) is a Create or a Like, not an activity of type %s", ErrBadRequest, o.typ)
	}
	o.scheme = signing.Scheme(req.Signature)
	switch o.scheme {
	case "":
		o.scheme = signing.SchemeCavage
	case signing.SchemeCavage, signing.SchemeRFC9421:
	default:
		return o, fmt.Errorf("%w: signature %q is not cavage or rfc9421", ErrBadRequest, req.Signature)
	}
	if req.Tamper != "" && o.scheme != signing.SchemeCavage {
		return o, fmt.Errorf("%w: a forged send (tamper) is signed cavage: signature %q cannot be forged", ErrBadRequest, req.Signature)
	}
	if o.typ == "Like" {
		if json.Unmarshal(req.Object, &o.likeOf) != nil || absoluteURL("object", o.likeOf) != nil {
			return o, fmt.Errorf("%w: a Like needs object: the URL of the post to like", ErrBadRequest)
		}
	}
	return o, nil
}

// draftSend builds o's activity from from to t (a Follow is registered as pending first, so
// its Accept finds it); a generated Note comes back too, for the sender's outbox once sent.
func (in *Inbox) draftSend(from *actors.Actor, t target, o sendOrder, object json.RawMessage) (any, *actors.SentNote, error) {
	now := in.now().UTC()
	graph := in.world.Graph
	switch o.typ {
	case "Follow":
		f := from.Follow(actors.FollowSpec{Published: now, Seq: randSeq(), Object: t.id})
		if err := graph.AddFollowing(from.ID, t.id, f.ID); err != nil {
			return nil, nil, err
		}
		return f, nil, nil
	case "Undo":
		rel, ok := graph.FollowingByRemote(from.ID, t.id)
		if !ok {
			return nil, nil, fmt.Errorf("%w: %s does not follow %s: there is no Follow to undo", ErrBadRequest, from.Acct(), t.id)
		}
		return in.undoOf(from, rel), nil, nil
	case "Create":
		if len(bytes.TrimSpace(object)) > 0 && bytes.TrimSpace(object)[0] == '{' {
			return actors.Activity{Context: "https://www.w3.org/ns/activitystreams",
				ID:   from.ID + "/notes/manual-" + strconv.FormatUint(randSeq(), 36) + "/activity",
				Type: "Create", Actor: from.ID, Published: now.Format(time.RFC3339),
				To: []string{actors.PublicAudience}, Cc: []string{from.Followers(), t.id}, Object: object}, nil, nil
		}
		c := from.CreateNote(actors.NoteSpec{Published: now, Seq: randSeq(), Bytes: 120, MentionID: t.id, MentionHandle: t.handle})
		return c, &actors.SentNote{Actor: from.ID, Note: c.Object.(actors.Note).ID}, nil
	}
	return from.Like(actors.LikeSpec{Published: now, Seq: randSeq(), Object: o.likeOf}), nil, nil
}

// undoOf builds the Undo of rel's Follow: regenerated exactly when the
// Follow is one the crowd's builders made, else rebuilt from the relation.
func (in *Inbox) undoOf(from *actors.Actor, rel actors.Relation) any {
	if f, ok := in.crowdFollow(rel.FollowID); ok && f.Actor == from.ID {
		if u, err := from.Object(rel.FollowID[len(from.ID):] + "/undo"); err == nil {
			return u
		}
	}
	return actors.Activity{Context: "https://www.w3.org/ns/activitystreams", ID: rel.FollowID + "/undo", Type: "Undo",
		Actor: from.ID, Object: actors.Activity{ID: rel.FollowID, Type: "Follow", Actor: from.ID, Object: rel.Remote}}
}

// maxSendBody bounds a sent activity's request: it carries its object, content and all.
const maxSendBody = 1 << 20

func (in *Inbox) handleSend(w http.ResponseWriter, r *http.Request) {
	var req adminapi.SendRequest
	if err := adminapi.DecodeStrictBody(w, r, maxSendBody, &req); err != nil {
		writeError(w, fmt.Errorf("%w: body is not a JSON {from, type, to, object, …}: %w", ErrBadRequest, err))
		return
	}
	res, err := in.SendActivity(r.Context(), req)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, res)
}

// RecordOutbox adds Creates another process sent to their actors'
// outboxes: all of req's items, or none when one names no crowd actor or
// no note its builders made (ErrBadRequest).
func (in *Inbox) RecordOutbox(req adminapi.OutboxRequest) (adminapi.OutboxResult, error) {
	n, err := recordBatch(req.Items, adminapi.MaxOutboxItems, func(it adminapi.OutboxItem) actors.SentNote {
		return actors.SentNote{Actor: it.Actor, Note: it.Note}
	}, in.world.RecordSent, actors.ErrNotSent)
	return adminapi.OutboxResult{Recorded: n}, err
}

func (in *Inbox) handleOutbox(w http.ResponseWriter, r *http.Request) {
	serveBatch(w, r, "{items: [{actor, note}]}", in.RecordOutbox)
}

func (in *Inbox) handleLookup(w http.ResponseWriter, r *http.Request) {
	q, err := adminapi.ParseLookupQuery(r.URL.Query())
	if err != nil {
		writeError(w, fmt.Errorf("%w: %v", ErrBadRequest, err))
		return
	}
	res, err := in.Lookup(r.Context(), q)
	if err != nil {
		writeError(w, err)
		return
	}
	adminapi.WriteJSON(w, http.StatusOK, res)
}
