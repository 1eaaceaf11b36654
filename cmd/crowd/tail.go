package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/adminapi"
)

type tailFlags struct {
	admin     adminFlags
	actor     string
	typ       string
	direction string
	json      bool
	backlog   int
}

func newTailCmd() *cobra.Command {
	f := &tailFlags{}
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow the running crowd's activity log live: every activity in and out, with its verdict",
		Long: `Follow the activity log of a running ` + "`crowd serve`" + ` (its admin API, --admin) live, one line per
activity in or out: time, direction, type, actor → recipient, verdict, HTTP status, duration
and the reason of a rejection. An entry is logged when its exchange ends, and its time is when
it began, so lines are in the order exchanges ended: an incoming Accept can be listed before
the outgoing Follow it answers, with a later time. --json prints each log entry whole (headers
and body included), one JSON object a line. Ctrl-C ends it.`,
		Example: `  crowd tail
  crowd tail --actor alice@flood3.test --type Follow,Accept
  crowd tail --direction in --json | jq .reason`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTail(cmd.Context(), cmd.OutOrStdout(), func(msg string) { warn(cmd, msg) }, f)
		},
	}
	f.admin.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.actor, "actor", "", "only activities by, to or about this actor: name@host, an actor URL, or a host for all its actors")
	fl.StringVar(&f.typ, "type", "", "only these activity types, comma-separated (Follow,Accept,…)")
	fl.StringVar(&f.direction, "direction", "", "only in (received by the crowd) or out (sent by it)")
	fl.BoolVar(&f.json, "json", false, "print each log entry as one line of JSON, whole")
	fl.IntVar(&f.backlog, "backlog", 10, "first print up to this many of the latest matching entries")
	return cmd
}

// runTail follows the crowd's activity log on stdout; warn says what is
// not a line of the log (a type no server sends, entries lost).
func runTail(ctx context.Context, stdout io.Writer, warn func(string), f *tailFlags) error {
	f.direction = strings.ToLower(f.direction)
	switch f.direction {
	case "", adminapi.DirIn, adminapi.DirOut:
	default:
		return usage(fmt.Errorf("--direction %q: want in or out", f.direction))
	}
	if f.backlog < 0 {
		return usage(fmt.Errorf("--backlog %d: want 0 or more", f.backlog))
	}
	for t := range strings.SplitSeq(f.typ, ",") {
		if activity, object, ok := strings.Cut(strings.TrimSpace(t), "("); ok {
			// As the tail's lines show an activity of an object:
			// Accept(Follow). No type has parentheses: it would match nothing.
			return usage(fmt.Errorf("--type %q: a line's %s(%s names the activity, then its object's type in parentheses; give --type %s",
				strings.TrimSpace(t), activity, object, activity))
		}
		if msg := unknownTypeWarning(strings.TrimSpace(t)); msg != "" {
			warn(msg)
		}
	}
	c, err := f.admin.client()
	if err != nil {
		return err
	}
	stream, err := c.Stream(ctx, adminapi.StreamQuery{
		Filter:  adminapi.Filter{Actor: f.actor, Type: f.typ, Direction: f.direction},
		Backlog: f.backlog,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if ae, ok := apiRefusal(err); ok && ae.Status == http.StatusBadRequest {
			return usage(errors.New(filterRefusal(ae.Reason))) // the API's filter check: a flag's value
		}
		return err
	}
	defer stream.Close()
	// As the journal writes entries: bodies keep <, > and & readable.
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	err = stream.Read(func(ev adminapi.Event) error {
		if ev.Lost > 0 {
			msg := fmt.Sprintf("… %d entries lost here: this tail read more slowly than the crowd logged (the activity log in the crowd's state dir has them all)", ev.Lost)
			if f.json {
				warn(msg)
			} else {
				fmt.Fprintln(stdout, msg)
			}
		}
		if f.json {
			return enc.Encode(ev.Entry)
		}
		_, err := fmt.Fprintln(stdout, entryLine(&ev.Entry))
		return err
	})
	if ctx.Err() != nil {
		return nil // Ctrl-C: the end the user asked for
	}
	if err != nil {
		return fmt.Errorf("the activity stream of the crowd at %s (--admin) broke off: %w", f.admin.addr, err)
	}
	return fmt.Errorf("the activity stream of the crowd at %s (--admin) ended: that crowd is shutting down", f.admin.addr)
}

// unknownTypeWarning says why a --type that is no activity type a server
// sends (a typo, "Folow") may never show a line, naming the nearest type; ""
// for a known type in any case. It warns rather than refuses: a server may
// send types of its own, and the tail shows those too.
func unknownTypeWarning(t string) string {
	if t == "" {
		return ""
	}
	// A typo is an edit or so away: a letter in four at most, so that a short
	// type of the server's own ("Bite") is not taken for a near one ("Like").
	best, bestDistance := "", max(1, len(t)/4)+1
	for _, known := range adminapi.ActivityTypes() {
		if strings.EqualFold(t, known) {
			return ""
		}
		if d := editDistance(strings.ToLower(t), strings.ToLower(known)); d < bestDistance {
			best, bestDistance = known, d
		}
	}
	msg := fmt.Sprintf("--type %q is no ActivityStreams activity type; waiting for it all the same", t)
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", best)
	}
	return msg
}

// editDistance is how many edits, in bytes, turn a into b: an insertion, a
// deletion, a change, or two neighbours swapped (RAET for RATE, the commonest
// slip of a typist, is one edit, not two).
func editDistance(a, b string) int {
	// d[i][j] is the distance between a[:i] and b[:j].
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// filterRefusal says the admin API's refusal of a filter in the tail's
// terms: the query parameter it names (actor="x": …) becomes the flag that
// set it (--actor="x": …).
func filterRefusal(reason string) string {
	reason = strings.TrimPrefix(reason, "bad request: ")
	for _, p := range []string{adminapi.ParamActor, adminapi.ParamType, adminapi.ParamDirection, adminapi.ParamBacklog} {
		if strings.HasPrefix(reason, p+"=") {
			return "--" + reason
		}
	}
	return reason
}

// entryLine renders an activity log entry as one readable line:
//
//	15:04:05.000 in  Follow        alice@sut.test → bob@flood2.test  accepted 202 3.1ms  follower recorded
func entryLine(e *adminapi.Entry) string {
	if e.Refused() {
		return refusedLine(e)
	}
	typ := e.Type
	if typ == "" {
		typ = "?"
	}
	if e.ObjectType != "" {
		typ += "(" + e.ObjectType + ")"
	}
	from, to := e.Actor, ""
	switch e.Direction {
	case adminapi.DirOut:
		if from == "" {
			from = e.Local
		}
		to = e.To
	default:
		if from == "" {
			// An unparsable body: the signature still names the sender.
			from, _, _ = strings.Cut(e.KeyID, "#")
		}
		if from == "" {
			from = e.Remote
		}
		to = e.Local
	}
	if to == "" {
		to = e.URL // a shared inbox, or an inbox whose owner is unknown
	}
	status := "---"
	if e.Status != 0 {
		status = strconv.Itoa(e.Status)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %-3s %-14s %s → %s  %s%s %s %s", e.Time.Local().Format("15:04:05.000"), e.Direction, typ,
		shortActor(from), shortActor(to), weatherMark(e), e.Verdict, status, formatMS(e.DurationMS))
	if e.Attempt > 1 {
		fmt.Fprintf(&b, " attempt %d", e.Attempt)
	}
	for _, s := range []string{e.Reason, e.Note} {
		if s = strings.TrimSpace(s); s != "" {
			b.WriteString("  ")
			b.WriteString(strings.Join(strings.Fields(s), " ")) // one line, always
		}
	}
	return b.String()
}

// refusedLine renders an entry of a connection, handshake or lookup the
// origin's weather refused before any request was read: no activity to
// name, so the host, the condition and what happened on the wire:
//
//	15:04:05.000 in  flood3.test  refused (down): connection reset: the origin is down  from 127.0.0.1:50412
func refusedLine(e *adminapi.Entry) string {
	kind, _, _ := strings.Cut(e.Weather, ":")
	line := fmt.Sprintf("%s %-3s %s  refused (%s): %s", e.Time.Local().Format("15:04:05.000"), e.Direction, e.URL, kind,
		strings.Join(strings.Fields(e.Reason), " "))
	if e.Remote != "" {
		line += "  from " + e.Remote
	}
	return line
}

// weatherMark marks a delivery the origin's bad weather answered rather than the inbox
// ("[flaky 503] ", "[down no answer] ") or held before the inbox answered ("[slow +30.0s] ").
func weatherMark(e *adminapi.Entry) string {
	if e.Weather == "" {
		return ""
	}
	kind, _, _ := strings.Cut(e.Weather, ":")
	switch {
	case e.WeatherHeldMS > 0:
		return "[" + kind + " +" + strconv.FormatFloat(e.WeatherHeldMS/1000, 'f', 1, 64) + "s] "
	case e.Status == 0:
		return "[" + kind + " no answer] "
	}
	return "[" + kind + " " + strconv.Itoa(e.Status) + "] "
}

// shortActor shows an actor URL the way people name actors: the common
// /users/NAME form as NAME@host, anything else without its scheme.
func shortActor(id string) string {
	if id == "" {
		return "?"
	}
	u, err := url.Parse(id)
	if err != nil || u.Host == "" {
		return id
	}
	if name, ok := strings.CutPrefix(u.Path, "/users/"); ok && name != "" && !strings.Contains(name, "/") && u.Fragment == "" && u.RawQuery == "" {
		return name + "@" + u.Host
	}
	return strings.TrimPrefix(strings.TrimPrefix(id, "https://"), "http://")
}

// formatMS shows a duration in milliseconds with sensible precision.
func formatMS(ms float64) string {
	switch {
	case ms <= 0:
		return "-"
	case ms < 10:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	default:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	}
}
