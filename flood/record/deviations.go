package record

import (
	"fmt"
	"slices"
	"strings"
)

// Deviations are what a run changed from what it was asked (SCHEMA.md): the
// activities it sent are not the mix its settings name. Two runs whose
// deviations differ measured different work (see Comparable).
type Deviations struct {
	// FollowsDiverted is how many Creates were sent in place of a drawn
	// Follow, because no crowd actor was left that did not follow the
	// persona. Only sends count, never drafts left unsent.
	FollowsDiverted int64 `json:"follows_diverted"`
	// PersonasWithoutPosts names the personas with no post to like while
	// the mix has Likes: they were sent Creates and Follows instead.
	PersonasWithoutPosts []string `json:"personas_without_posts,omitempty"`
	// RungsSkipped are the rates of a ladder's rungs that were not run
	// because the ladder stopped at its shoulder (--stop-when) on this
	// rung, the last it ran.
	RungsSkipped []float64 `json:"rungs_skipped,omitempty"`
	// UndosDiverted is how many Announces were sent in place of a drawn
	// Undo, because nothing the run had sent (and seen answered 2xx) was
	// left to undo when it was drafted.
	UndosDiverted int64 `json:"undos_diverted,omitempty"`
	// LikesDiverted and AnnouncesDiverted are how many Creates were sent in
	// place of a drawn Like or Announce of a persona's post, because every
	// crowd actor had already reacted so to every post of the persona (a
	// reaction is kept, across runs, until its Undo). Only sends count.
	LikesDiverted     int64 `json:"likes_diverted,omitempty"`
	AnnouncesDiverted int64 `json:"announces_diverted,omitempty"`
}

// Empty reports whether the run did what it was asked.
func (d Deviations) Empty() bool {
	return d.FollowsDiverted == 0 && len(d.PersonasWithoutPosts) == 0 && len(d.RungsSkipped) == 0 && d.UndosDiverted == 0 &&
		d.LikesDiverted == 0 && d.AnnouncesDiverted == 0
}

// merge adds o's deviations (a run of another generator) to d's.
func (d *Deviations) merge(o Deviations) {
	d.FollowsDiverted += o.FollowsDiverted
	d.UndosDiverted += o.UndosDiverted
	d.LikesDiverted += o.LikesDiverted
	d.AnnouncesDiverted += o.AnnouncesDiverted
	for _, p := range o.PersonasWithoutPosts {
		if !slices.Contains(d.PersonasWithoutPosts, p) {
			d.PersonasWithoutPosts = append(d.PersonasWithoutPosts, p)
		}
	}
	slices.Sort(d.PersonasWithoutPosts)
	for _, r := range o.RungsSkipped {
		if !slices.Contains(d.RungsSkipped, r) {
			d.RungsSkipped = append(d.RungsSkipped, r)
		}
	}
	slices.Sort(d.RungsSkipped)
}

// Lines says each deviation in a sentence, for the table and the report.
func (d Deviations) Lines() []string {
	var out []string
	if d.FollowsDiverted > 0 {
		out = append(out, fmt.Sprintf("%d %s sent as %s: every crowd actor already followed the persona drawn",
			d.FollowsDiverted, Plural(int(d.FollowsDiverted), "Follow was", "Follows were"), Plural(int(d.FollowsDiverted), "a Create", "Creates")))
	}
	if d.UndosDiverted > 0 {
		out = append(out, fmt.Sprintf("%d %s sent as %s: nothing the run had sent was left to undo when drafted",
			d.UndosDiverted, Plural(int(d.UndosDiverted), "Undo was", "Undos were"), Plural(int(d.UndosDiverted), "an Announce", "Announces")))
	}
	for _, r := range d.reactions() {
		if r.n > 0 {
			out = append(out, fmt.Sprintf("%d %s sent as %s: every crowd actor had already %s every post of the persona drawn",
				r.n, Plural(int(r.n), r.kind+" was", r.kind+"s were"), Plural(int(r.n), "a Create", "Creates"), r.done))
		}
	}
	if n := len(d.PersonasWithoutPosts); n > 0 {
		names := d.PersonasWithoutPosts
		more := ""
		if n > 5 {
			names, more = names[:5], fmt.Sprintf(" and %d more", n-5)
		}
		out = append(out, fmt.Sprintf("%d %s no post to like (%s%s): sent Creates and Follows instead of Likes",
			n, Plural(n, "persona had", "personas had"), strings.Join(names, ", "), more))
	}
	if n := len(d.RungsSkipped); n > 0 {
		out = append(out, fmt.Sprintf("%d %s not run (%s/s): the ladder stopped at its shoulder (--stop-when)",
			n, Plural(n, "rung was", "rungs were"), formatRates(d.RungsSkipped)))
	}
	return out
}

// formatRates is rates as a comma list.
func formatRates(rates []float64) string {
	s := make([]string, len(rates))
	for i, r := range rates {
		s[i] = FormatNumber(r)
	}
	return strings.Join(s, ", ")
}

// short is the deviations in a few words, for the runs.md row.
func (d Deviations) short() string {
	var parts []string
	if d.FollowsDiverted > 0 {
		parts = append(parts, fmt.Sprintf("%d %s sent as %s", d.FollowsDiverted, Plural(int(d.FollowsDiverted), "Follow", "Follows"),
			Plural(int(d.FollowsDiverted), "a Create", "Creates")))
	}
	if d.UndosDiverted > 0 {
		parts = append(parts, fmt.Sprintf("%d %s sent as %s", d.UndosDiverted, Plural(int(d.UndosDiverted), "Undo", "Undos"),
			Plural(int(d.UndosDiverted), "an Announce", "Announces")))
	}
	for _, r := range d.reactions() {
		if r.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s sent as %s", r.n, Plural(int(r.n), r.kind, r.kind+"s"), Plural(int(r.n), "a Create", "Creates")))
		}
	}
	if n := len(d.PersonasWithoutPosts); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s without posts", n, Plural(n, "persona", "personas")))
	}
	if n := len(d.RungsSkipped); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %s skipped", n, Plural(n, "rung", "rungs")))
	}
	return strings.Join(parts, ", ")
}

// diff names how a's deviations and b's differ enough to change the mix:
// the share of sends diverted by more than a percentage point, or another
// set of personas without posts. Nil when they measured the same mix.
func (a Deviations) diff(b Deviations, sentA, sentB int64) []string {
	var d []string
	share := func(n, of int64) float64 {
		if of <= 0 {
			return 0
		}
		return float64(n) / float64(of)
	}
	sa, sb := share(a.FollowsDiverted, sentA), share(b.FollowsDiverted, sentB)
	if (a.FollowsDiverted > 0 || b.FollowsDiverted > 0) && (sa-sb > divertedShareTolerance || sb-sa > divertedShareTolerance) {
		d = append(d, fmt.Sprintf("Follows sent as Creates %d (%s of sends) ≠ %d (%s)", a.FollowsDiverted, FormatShare(sa), b.FollowsDiverted, FormatShare(sb)))
	}
	ua, ub := share(a.UndosDiverted, sentA), share(b.UndosDiverted, sentB)
	if (a.UndosDiverted > 0 || b.UndosDiverted > 0) && (ua-ub > divertedShareTolerance || ub-ua > divertedShareTolerance) {
		d = append(d, fmt.Sprintf("Undos sent as Announces %d (%s of sends) ≠ %d (%s)", a.UndosDiverted, FormatShare(ua), b.UndosDiverted, FormatShare(ub)))
	}
	for i, ra := range a.reactions() {
		rb := b.reactions()[i]
		sa, sb := share(ra.n, sentA), share(rb.n, sentB)
		if (ra.n > 0 || rb.n > 0) && (sa-sb > divertedShareTolerance || sb-sa > divertedShareTolerance) {
			d = append(d, fmt.Sprintf("%ss sent as Creates %d (%s of sends) ≠ %d (%s)", ra.kind, ra.n, FormatShare(sa), rb.n, FormatShare(sb)))
		}
	}
	if !slices.Equal(a.PersonasWithoutPosts, b.PersonasWithoutPosts) {
		d = append(d, fmt.Sprintf("personas without posts (no Likes) %d ≠ %d", len(a.PersonasWithoutPosts), len(b.PersonasWithoutPosts)))
	}
	return d
}

// divertedShareTolerance is the difference in the share of sends diverted
// from Follows to Creates that two runs may have and still be the same mix:
// one percentage point moves a default mix's Follow share (10 %) by a tenth.
const divertedShareTolerance = 0.01

// divertedReaction is a count of reactions sent as Creates, with the
// words that say it.
type divertedReaction struct {
	kind, done string
	n          int64
}

// reactions are d's diverted Likes and Announces, in that order.
func (d Deviations) reactions() [2]divertedReaction {
	return [2]divertedReaction{{"Like", "liked", d.LikesDiverted}, {"Announce", "boosted", d.AnnouncesDiverted}}
}
