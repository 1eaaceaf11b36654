package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/adminapi"
)

// tamperUsage is --tamper's help on crowd send.
const tamperUsage = "forge the send (a Create or a Like) as one kind a correct server refuses: body (changed after signing), " +
	"digest-unsigned, wrong-key (another actor's key), date or created (a day old), target (signed for another inbox), " +
	"replay (sent twice, the second time once the first was accepted) or unknown-key (a keyId that answers 404)"

// registerTamper adds crowd send's --tamper to fl.
func registerTamper(fl *pflag.FlagSet, tamper *string) {
	fl.StringVar(tamper, "tamper", "", tamperUsage)
}

// printForged says what a forged send drew, after the send itself.
func printForged(w io.Writer, f *adminapi.ForgedSend) {
	if f == nil {
		return
	}
	switch {
	case f.Verdict == adminapi.ForgedAccepted && f.Kind == tamperReplay:
		fmt.Fprintln(w, replayTaken)
		return
	}
	switch f.Verdict {
	case adminapi.ForgedAccepted:
		fmt.Fprintf(w, "SECURITY: the target accepted the %s forgery: it must refuse it\n", f.Kind)
	case adminapi.ForgedRefused:
		fmt.Fprintf(w, "forgery %s refused, as it should be\n", f.Kind)
	case adminapi.ForgedNotReplayed:
		fmt.Fprintf(w, "forgery %s: the original was answered %d, not accepted: nothing to replay\n", f.Kind, f.OriginalStatus)
	default:
		fmt.Fprintf(w, "forgery %s: no verdict (a 404, 410 or 429 answers about the inbox or the load, not the forgery; a 5xx or no answer, neither)\n", f.Kind)
	}
}

// tamperReplay is the replay kind (signing.TamperReplay), the one forgery
// whose 2xx proves nothing.
const tamperReplay = "replay"

// replayTaken is what a replay answered 2xx means: a real server answers a
// verified duplicate 202 and drops it by its id later, so no finding.
const replayTaken = "replay answered 2xx: not a finding. The target took the same signed request twice; " +
	"Mastodon and Fedify answer a verified duplicate 202 and drop it by its activity id, so only the target's log " +
	"or the activity's effect (processed once or twice) tells whether it guards against replays"

// forgedExit is crowd send's outcome for a forged send: exit 1 when the
// target accepted it (a finding) or gave no verdict, 0 when it refused it
// and for a replay answered 2xx (which proves nothing, see replayTaken).
func forgedExit(res *adminapi.SendResult) error {
	switch {
	case res.Forged.Verdict == adminapi.ForgedRefused:
		return nil
	case res.Forged.Verdict == adminapi.ForgedAccepted && res.Forged.Kind == tamperReplay:
		return nil
	}
	switch res.Forged.Verdict {
	case adminapi.ForgedAccepted:
		return exitCode{1, fmt.Errorf("%s accepted the %s forgery (HTTP %d): a security finding", res.Inbox, res.Forged.Kind, res.Status)}
	}
	return exitCode{1, fmt.Errorf("%s gave the %s forgery no verdict (HTTP %d)", res.Inbox, res.Forged.Kind, res.Status)}
}

// tamperRefusal turns the API's refusal of a tamper kind into a usage
// error naming the flag.
func tamperRefusal(tamper, reason string) error {
	if tamper != "" && strings.Contains(reason, "tamper") {
		return usage(fmt.Errorf("--tamper %q: %s", tamper, reason))
	}
	return nil
}
