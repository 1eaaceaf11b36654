package record

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxFindings bounds the findings a record lists; the rest are counted
// (Security.FindingsOmitted), so a SUT that accepts every forgery of a
// long run does not make a record of gigabytes.
const MaxFindings = 1000

// Security is the record's section on forged requests (`--tamper`,
// `--scenario forgery`): what each tamper kind drew from the SUT, and every
// forgery it answered 2xx, a security finding. See SCHEMA.md.
type Security struct {
	// Kinds counts the forged requests by tamper kind (signing.Tamper).
	Kinds map[string]*ForgeryCounts `json:"kinds"`
	// Findings are the forged requests the SUT answered 2xx, in the order
	// the answers came, at most MaxFindings.
	Findings []Finding `json:"findings"`
	// FindingsOmitted counts the findings past MaxFindings.
	FindingsOmitted int64 `json:"findings_omitted,omitempty"`
	// ReplaysUnready counts replays drawn before the SUT had accepted any
	// request to replay: they went out as the honest request they were
	// drawn with, and are not in Kinds.
	ReplaysUnready int64 `json:"replays_unready,omitempty"`
	// KeyRefusals lists the crowd's keys (honest requests) the SUT
	// answered 401 before it first answered 2xx to one, at most
	// MaxKeyRefusals, sorted by keyId: after a key rotation, how long the
	// SUT kept a stale key.
	KeyRefusals []KeyRefusal `json:"key_refusals,omitempty"`
	// SchemesAccepted are the signature schemes ("cavage", "rfc9421") of
	// the honest requests the SUT answered 2xx, sorted: a key refused only
	// in a scheme missing here was refused for its scheme, not its key.
	SchemesAccepted []string `json:"schemes_accepted,omitempty"`
	// Effects says how the effect of the forgeries answered 2xx was looked
	// for; nil when it was not (no client-API token): every 2xx is then
	// "accepted, effect unknown".
	Effects *EffectLookup `json:"effects,omitempty"`
}

// EffectLookup is how a run looked for its accepted forgeries' effects
// through the SUT's client API, after letting it process them.
type EffectLookup struct {
	// Via names the API looked at ("the Mastodon client API at https://sut.test").
	Via string `json:"via"`
	// SettleSeconds is how long the SUT had, after the flood, before the look-up.
	SettleSeconds float64 `json:"settle_seconds"`
	// Unread lists the places the look-up could not read (their forgeries
	// stay "effect unknown"), at most MaxUnread.
	Unread []string `json:"unread,omitempty"`
}

// MaxUnread bounds EffectLookup.Unread.
const MaxUnread = 20

// ForgeryCounts is what one tamper kind drew: sent = accepted + refused +
// failed (sends interrupted before their answer are not counted), and of
// the accepted, effective + no_effect + the rest, whose effect is unknown.
type ForgeryCounts struct {
	Sent     int64 `json:"sent"`
	Accepted int64 `json:"accepted"` // answered 2xx
	Refused  int64 `json:"refused"`  // answered 4xx but 404, 410 and 429
	// Failed counts the answers that judge nothing: 404 (no such inbox),
	// 410 and 429 (an honest request there draws them too), 5xx, 1xx/3xx,
	// timeouts, connection errors.
	Failed int64 `json:"failed"`
	// Effective counts the accepted forgeries whose marker the look-up
	// found where they would land: each is a finding.
	Effective int64 `json:"effective,omitempty"`
	// NoEffect counts the accepted forgeries looked for where they would
	// land and not found: the SUT answered 2xx and dropped them.
	NoEffect int64 `json:"no_effect,omitempty"`
}

// Unknown is the accepted forgeries whose effect was not judged.
func (c ForgeryCounts) Unknown() int64 { return c.Accepted - c.Effective - c.NoEffect }

// The effects of a forgery the SUT answered 2xx (Finding.Effect).
const (
	EffectUnknown = ""     // not looked for, or not where the look-up could read
	EffectNone    = "none" // looked for where it would land, not found
	EffectSeen    = "seen" // found where it would land (Finding.Seen says where)
)

// Finding is one forged request the SUT answered 2xx.
type Finding struct {
	Kind     string `json:"kind"`     // the tamper kind
	Activity string `json:"activity"` // the forged activity's id
	Inbox    string `json:"inbox"`    // where it was posted
	Status   int    `json:"status"`   // the SUT's answer
	// Effect is EffectUnknown (omitted), EffectNone or EffectSeen.
	Effect string `json:"effect,omitempty"`
	// Seen says where the effect was seen (EffectSeen only).
	Seen string `json:"seen,omitempty"`
}

// Judge sets the effect of the finding of activity (EffectNone, or
// EffectSeen with where) and counts it under its kind. A finding already
// judged, or not listed, is left as it is; it reports whether it judged.
func (s *Security) Judge(activity, effect, where string) bool {
	for i := range s.Findings {
		f := &s.Findings[i]
		if f.Activity != activity || f.Effect != EffectUnknown {
			continue
		}
		c := s.Kinds[f.Kind]
		if c == nil || (effect != EffectNone && effect != EffectSeen) {
			return false
		}
		f.Effect = effect
		if effect == EffectSeen {
			f.Seen = where
			c.Effective++
		} else {
			c.NoEffect++
		}
		return true
	}
	return false
}

// Add counts one forged request of kind that got class (status when it
// was answered) at inbox, listing it as a finding when it was accepted.
func (s *Security) Add(kind, activity, inbox string, class Class, status int) {
	if s.Kinds == nil {
		s.Kinds = map[string]*ForgeryCounts{}
	}
	c := s.Kinds[kind]
	if c == nil {
		c = &ForgeryCounts{}
		s.Kinds[kind] = c
	}
	c.Sent++
	switch {
	case class.OK():
		c.Accepted++
		if len(s.Findings) < MaxFindings {
			s.Findings = append(s.Findings, Finding{Kind: kind, Activity: activity, Inbox: inbox, Status: status})
		} else {
			s.FindingsOmitted++
		}
	case class == Class401 || class == Class403 || class == ClassOther4xx:
		c.Refused++
	default:
		c.Failed++
	}
}

// Clone is a deep copy of s (nil for nil).
func (s *Security) Clone() *Security {
	if s == nil {
		return nil
	}
	out := &Security{Findings: slices.Clone(s.Findings), FindingsOmitted: s.FindingsOmitted, ReplaysUnready: s.ReplaysUnready,
		Kinds: make(map[string]*ForgeryCounts, len(s.Kinds)), KeyRefusals: slices.Clone(s.KeyRefusals), SchemesAccepted: slices.Clone(s.SchemesAccepted)}
	if s.Effects != nil {
		e := *s.Effects
		e.Unread = slices.Clone(e.Unread)
		out.Effects = &e
	}
	for k, c := range s.Kinds {
		cc := *c
		out.Kinds[k] = &cc
	}
	return out
}

// Total sums the counts of every kind.
func (s *Security) Total() ForgeryCounts { return s.sum(true) }

// replayKind is the tamper kind (signing.TamperReplay) whose 2xx is no
// verdict: a correct server takes a verified duplicate (Fedify, Mastodon
// answer it 202) and drops it by its activity id; only its log, or the
// effect counted twice, tells.
const replayKind = "replay"

// Judged sums every kind's counts but the replays answered 2xx: the
// answers that are a verdict, and those (refused or none) that would
// be one. The summary's verdict and the gates over every kind use it, so
// that a correct server answering replays 202 draws no SECURITY line (crowd
// send --tamper replay says the same); replay.forged_accepted still counts
// them.
func (s *Security) Judged() ForgeryCounts { return s.sum(false) }

// sum adds up the kinds, the replays answered 2xx among them when
// withReplay.
func (s *Security) sum(withReplay bool) ForgeryCounts {
	var t ForgeryCounts
	if s == nil {
		return t
	}
	for k, c := range s.Kinds {
		if k == replayKind && !withReplay {
			t.Sent += c.Sent - c.Accepted
			t.Refused += c.Refused
			t.Failed += c.Failed
			continue
		}
		t.Sent += c.Sent
		t.Accepted += c.Accepted
		t.Refused += c.Refused
		t.Failed += c.Failed
		t.Effective += c.Effective
		t.NoEffect += c.NoEffect
	}
	return t
}

// merge adds o to s: counts add up, findings are appended up to
// MaxFindings.
func (s *Security) merge(o *Security) {
	if o == nil {
		return
	}
	if s.Kinds == nil {
		s.Kinds = map[string]*ForgeryCounts{}
	}
	for k, c := range o.Kinds {
		t := s.Kinds[k]
		if t == nil {
			t = &ForgeryCounts{}
			s.Kinds[k] = t
		}
		t.Sent += c.Sent
		t.Accepted += c.Accepted
		t.Refused += c.Refused
		t.Failed += c.Failed
		t.Effective += c.Effective
		t.NoEffect += c.NoEffect
	}
	s.Effects = mergeEffects(s.Effects, o.Effects)
	room := max(0, MaxFindings-len(s.Findings))
	take := min(room, len(o.Findings))
	s.Findings = append(s.Findings, o.Findings[:take]...)
	s.FindingsOmitted += o.FindingsOmitted + int64(len(o.Findings)-take)
	s.ReplaysUnready += o.ReplaysUnready
	s.KeyRefusals = mergeKeyRefusals(s.KeyRefusals, o.KeyRefusals)
	for _, sc := range o.SchemesAccepted {
		if !slices.Contains(s.SchemesAccepted, sc) {
			s.SchemesAccepted = append(s.SchemesAccepted, sc)
		}
	}
	slices.Sort(s.SchemesAccepted)
}

// mergeEffects joins two generators' look-ups: each API named once, the
// longest settle, the places either could not read (bounded).
func mergeEffects(a, b *EffectLookup) *EffectLookup {
	if a == nil || b == nil {
		if a == nil && b != nil {
			c := *b
			c.Unread = slices.Clone(b.Unread)
			return &c
		}
		return a
	}
	out := &EffectLookup{Via: a.Via, SettleSeconds: max(a.SettleSeconds, b.SettleSeconds), Unread: slices.Clone(a.Unread)}
	if b.Via != a.Via && !strings.Contains(a.Via, b.Via) {
		out.Via = a.Via + "; " + b.Via
	}
	for _, u := range b.Unread {
		if len(out.Unread) < MaxUnread && !slices.Contains(out.Unread, u) {
			out.Unread = append(out.Unread, u)
		}
	}
	return out
}

// mergeKeyRefusals joins two generators' lists: a key's refusals add up,
// and it was accepted when either saw it accepted.
func mergeKeyRefusals(a, b []KeyRefusal) []KeyRefusal {
	by := map[string]KeyRefusal{}
	for _, k := range append(slices.Clone(a), b...) {
		m, seen := by[k.KeyID]
		if seen && m.Scheme != k.Scheme {
			k.Scheme = "" // refused in both schemes across generators
		}
		m.KeyID, m.Refused, m.Accepted, m.Scheme = k.KeyID, m.Refused+k.Refused, m.Accepted || k.Accepted, k.Scheme
		by[k.KeyID] = m
	}
	out := make([]KeyRefusal, 0, len(by))
	for _, k := range by {
		out = append(out, k)
	}
	slices.SortFunc(out, func(x, y KeyRefusal) int { return strings.Compare(x.KeyID, y.KeyID) })
	if len(out) > MaxKeyRefusals {
		out = out[:MaxKeyRefusals]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// mergeSecurity is the security section of records merged: nil when none
// has one.
func mergeSecurity(recs []*Record) *Security {
	var out *Security
	for _, r := range recs {
		if r.Security == nil {
			continue
		}
		if out == nil {
			out = &Security{Kinds: map[string]*ForgeryCounts{}, Findings: []Finding{}}
		}
		out.merge(r.Security)
	}
	return out
}

// SecurityLines describe the section for people: one line per kind, then
// the findings (at most limit of them; the rest counted). None without
// forged requests.
func (s *Security) SecurityLines(limit int) []string {
	if s == nil {
		return nil
	}
	lines := s.keyRefusalLines()
	if len(s.Kinds) == 0 {
		return lines
	}
	return append(s.forgeryLines(limit), lines...)
}

// keyRefusalLines describe KeyRefusals: one line for the keys refused only
// in a scheme the SUT never accepted (the scheme is the cause), one for the
// rest (a SUT holding stale keys).
func (s *Security) keyRefusalLines() []string {
	var lines []string
	byScheme := map[string][]KeyRefusal{}
	var stale []KeyRefusal
	for _, k := range s.KeyRefusals {
		if k.Scheme != "" && !slices.Contains(s.SchemesAccepted, k.Scheme) {
			byScheme[k.Scheme] = append(byScheme[k.Scheme], k)
		} else {
			stale = append(stale, k)
		}
	}
	for _, scheme := range slices.Sorted(maps.Keys(byScheme)) {
		keys, refused, never, worst := refusalTotals(byScheme[scheme])
		advice := "sign with --signature cavage or both"
		if scheme != "rfc9421" {
			advice = "check that the SUT can fetch the crowd's actors and keys"
		}
		lines = append(lines, fmt.Sprintf("Keys refused for their scheme: %d key(s) answered 401 %d times (%d never accepted; most: %s, %d), every one signed %s, a scheme the SUT accepted no request in — the SUT refuses %s signatures (not stale keys); %s.",
			keys, refused, never, worst.KeyID, worst.Refused, schemeName(scheme), schemeName(scheme), advice))
	}
	if len(stale) > 0 {
		keys, refused, never, worst := refusalTotals(stale)
		lines = append(lines, fmt.Sprintf("Keys refused before accepted: %d key(s) answered 401 %d times before a 2xx (%d never accepted; most: %s, %d) — a SUT holding stale keys until it refetched.",
			keys, refused, never, worst.KeyID, worst.Refused))
	}
	return lines
}

// refusalTotals sums a list of key refusals and picks the most refused.
func refusalTotals(ks []KeyRefusal) (keys, refused, never int64, worst KeyRefusal) {
	for _, k := range ks {
		keys++
		refused += k.Refused
		if !k.Accepted {
			never++
		}
		if k.Refused > worst.Refused {
			worst = k
		}
	}
	return keys, refused, never, worst
}

// schemeName is a signature scheme as people name it.
func schemeName(scheme string) string {
	switch scheme {
	case "rfc9421":
		return "RFC 9421"
	case "cavage":
		return "draft-cavage"
	}
	return scheme
}

// forgeryLines describe Kinds and the findings.
func (s *Security) forgeryLines(limit int) []string {
	t := s.Total()
	verdict := s.verdict(s.Judged())
	if r := s.Kinds[replayKind]; r != nil && r.Accepted > 0 {
		verdict += fmt.Sprintf("; %d replay(s) answered 2xx, which judges nothing (a correct server takes a verified duplicate and drops it by its id: the SUT's log tells)", r.Accepted)
	}
	lines := []string{fmt.Sprintf("Forged requests: %d sent, %d refused, %d answered 2xx (%d took effect, %d without effect, %d effect unknown), %d without a verdict: %s.",
		t.Sent, t.Refused, t.Accepted, t.Effective, t.NoEffect, t.Unknown(), t.Failed, verdict)}
	if s.Effects != nil {
		l := fmt.Sprintf("  effects looked for through %s, %s after the flood", s.Effects.Via, formatSeconds(s.Effects.SettleSeconds))
		if len(s.Effects.Unread) > 0 {
			l += "; could not read: " + strings.Join(s.Effects.Unread, ", ")
		}
		lines = append(lines, l)
	} else if t.Accepted > 0 {
		lines = append(lines, "  effects not looked for: a 2xx is \"accepted, effect unknown\" (give the personas' client-API tokens, --post-token, to judge them)")
	}
	kinds := make([]string, 0, len(s.Kinds))
	for k := range s.Kinds {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		c := s.Kinds[k]
		mark := ""
		switch {
		case c.Effective > 0:
			mark = "  <- TOOK EFFECT"
		case k == replayKind && c.Unknown() > 0:
			mark = "  <- 2xx: see the SUT's log"
		case c.Unknown() > 0:
			mark = "  <- ACCEPTED, EFFECT UNKNOWN"
		}
		lines = append(lines, fmt.Sprintf("  %-16s sent %d, refused %d, 2xx without effect %d, took effect %d, accepted effect unknown %d, no verdict %d%s",
			k, c.Sent, c.Refused, c.NoEffect, c.Effective, c.Unknown(), c.Failed, mark))
	}
	if s.ReplaysUnready > 0 {
		lines = append(lines, fmt.Sprintf("  (%d replays drawn before any request was accepted went out honest)", s.ReplaysUnready))
	}
	shown, more := 0, s.FindingsOmitted
	for _, f := range s.Findings {
		if f.Effect == EffectNone || (f.Kind == replayKind && f.Effect == EffectUnknown) {
			continue // answered 2xx and dropped, or a replay taken: counted, not a finding
		}
		if shown == limit {
			more++
			continue
		}
		shown++
		if f.Effect == EffectSeen {
			lines = append(lines, fmt.Sprintf("  finding: %s forgery %s answered %d at %s took effect: seen in %s", f.Kind, f.Activity, f.Status, f.Inbox, f.Seen))
		} else {
			lines = append(lines, fmt.Sprintf("  finding: %s forgery %s answered %d at %s, effect unknown", f.Kind, f.Activity, f.Status, f.Inbox))
		}
	}
	switch {
	case s.FindingsOmitted > 0:
		lines = append(lines, fmt.Sprintf("  … %d more findings (the record lists %d at most)", more, MaxFindings))
	case more > 0:
		lines = append(lines, fmt.Sprintf("  … %d more findings in the record", more))
	}
	return lines
}

// verdict is the summary's verdict on the forgeries t counts: a refusal
// claimed only when every one was refused, and one was.
func (s *Security) verdict(t ForgeryCounts) string {
	switch {
	case t.Sent == 0:
		return "no forged request whose answer judges the SUT (only replays answered 2xx)"
	case t.Effective > 0:
		return fmt.Sprintf("SECURITY: %d forged request(s) took effect", t.Effective)
	case t.Unknown() > 0:
		return fmt.Sprintf("SECURITY: %d forged request(s) accepted, effect unknown", t.Unknown())
	case t.Failed > 0:
		return fmt.Sprintf("%d forged request(s) got no verdict; none seen accepted", t.Failed)
	case t.NoEffect > 0:
		return "every forged request was refused or answered 2xx and dropped"
	}
	return "every forged request was refused"
}

// formatSeconds writes seconds as a duration ("5s", "1.5s"): a settle
// time, a weather change's offset.
func formatSeconds(sec float64) string {
	return strconv.FormatFloat(sec, 'f', -1, 64) + "s"
}

// forgedCounter is a gate counter of the section, over every kind (but
// the replays taken, see Judged; forged_sent counts every one) or one:
// forged_sent; forged_accepted, the 2xx answers not shown to be without
// effect; forged_effective, those that took effect, known only when every
// 2xx was judged. Without a security section, or when the SUT answered
// none of the forgeries counted with a verdict (2xx or a refusal), there
// is no data: a gate on forgeries of a run that sent none, or that the SUT
// rate-limited all of, is missed, not met.
func (s *Security) forgedCounter(metric, kind string) (n, of int64, ok bool) {
	if s == nil {
		return 0, 0, false
	}
	c := s.Judged()
	if metric == "forged_sent" {
		c = s.Total()
	}
	if kind != "" {
		k, found := s.Kinds[strings.ReplaceAll(strings.ToLower(kind), "_", "-")]
		if !found {
			return 0, 0, false
		}
		c = *k
	}
	if metric != "forged_sent" && c.Accepted+c.Refused == 0 {
		// Every answer a 404, 429, 5xx or none (or replays taken alone):
		// the SUT judged no forgery, so a gate on what it accepted cannot
		// hold, nor fail.
		return 0, 0, false
	}
	switch metric {
	case "forged_sent":
		return c.Sent, c.Sent, true
	case "forged_effective":
		return c.Effective, c.Sent, c.Unknown() == 0
	}
	return c.Accepted - c.NoEffect, c.Sent, true
}

// isForgedCounter reports the counters of the security section.
func isForgedCounter(m string) bool {
	return m == "forged_accepted" || m == "forged_sent" || m == "forged_effective"
}

// MaxKeyRefusals bounds the keys Security.KeyRefusals lists.
const MaxKeyRefusals = 1000

// KeyRefusal is one of the crowd's keys the SUT answered 401 before it
// accepted a request signed with it (or never did): the SUT did not know
// the key yet, or held a stale one (after `crowd keys rotate`) until it
// refetched the actor.
type KeyRefusal struct {
	KeyID string `json:"key_id"`
	// Refused counts the 401s before the first 2xx (all of them when
	// Accepted is false).
	Refused int64 `json:"refused"`
	// Accepted says a request signed with the key was answered 2xx after
	// the refusals.
	Accepted bool `json:"accepted"`
	// Scheme is the signature scheme of every refused request ("cavage",
	// "rfc9421"); empty when they mixed schemes or it is unknown (a double
	// knock, --signature both, whose fallback counts tell the scheme apart).
	Scheme string `json:"scheme,omitempty"`
}

// KeyRefusalsTotal sums Refused over the listed keys.
func (s *Security) KeyRefusalsTotal() (keys, refused, never int64) {
	if s == nil {
		return 0, 0, 0
	}
	for _, k := range s.KeyRefusals {
		keys++
		refused += k.Refused
		if !k.Accepted {
			never++
		}
	}
	return keys, refused, never
}
