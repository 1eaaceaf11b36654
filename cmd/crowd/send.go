package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/pasture"
)

type sendFlags struct {
	admin    adminFlags
	from     string
	typ      string
	to       string
	object   string
	inboxURL string
	json     bool
	public   bool
	tamper   string // send_tamper.go
	sig      string // --signature: cavage or rfc9421
}

func newSendCmd() *cobra.Command {
	f := &sendFlags{}
	cmd := &cobra.Command{
		Use:   "send",
		Short: "Send one signed activity from a crowd actor now, and show what came back",
		Long: `Ask the running ` + "`crowd serve`" + ` (its admin API, --admin) to send one activity by hand, signed
by a crowd actor, and print the activity, the inbox it went to, and the target's answer.

  Follow   follows --to (registered as pending, so the target's Accept finds it)
  Undo     undoes --from's Follow of --to
  Create   a public Note mentioning --to (or --object, a JSON object to wrap)
  Like     likes --object, the URL of a post

The target (--to) is acct:name@host, name@host or an actor URL; it is resolved as a real server
would (WebFinger, then a signed fetch of the actor). As for a flood, every host the send talks to
must resolve to loopback or a private network unless --allow-public-target: a signed activity
speaks for the crowd's actors. Exits 2 for a mistake in the command (a flag, an unknown --from, a
public target without --allow-public-target), 1 when the crowd could not send it (nothing to
undo, a target it cannot reach) or the target answered non-2xx.`,
		Example: `  crowd send --from alice@flood3.test --type Follow --to acct:admin@sut.test
  crowd send --from alice@flood3.test --type Like --to acct:admin@sut.test --object https://sut.test/notes/1
  crowd send --from alice@flood3.test --type Undo --to acct:admin@sut.test`,
		Args: noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSend(cmd.Context(), cmd.OutOrStdout(), f)
		},
	}
	f.admin.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.from, "from", "", "the crowd actor that sends: NAME@floodN.test or its actor URL (required)")
	fl.StringVar(&f.typ, "type", "", "Follow, Undo, Create or Like (required)")
	fl.StringVar(&f.to, "to", "", "the target actor: acct:name@host, name@host or an actor URL (required)")
	fl.StringVar(&f.object, "object", "", "Like: the URL of the post to like; Create: a JSON object to wrap instead of the generated Note")
	fl.StringVar(&f.inboxURL, "inbox", "", "POST here instead of the target's inbox (its shared inbox for Create)")
	fl.BoolVar(&f.json, "json", false, "print the admin API's answer as JSON")
	fl.BoolVar(&f.public, "allow-public-target", false, "let the send reach hosts that resolve to public addresses")
	registerTamper(fl, &f.tamper)
	fl.StringVar(&f.sig, "signature", "cavage", "HTTP signature scheme: cavage (draft-cavage-12) or rfc9421 (RFC 9421 with Content-Digest, as Fedify >= 1.6 signs; Mastodon >= 4.5 verifies it)")
	return cmd
}

// sendTypes are the activity types `crowd send` builds.
func sendTypes() []string { return []string{"Follow", "Undo", "Create", "Like"} }

// request checks the flags and builds the admin API's request; every
// mistake is a usage error naming its flag.
func (f *sendFlags) request() (adminapi.SendRequest, error) {
	var req adminapi.SendRequest
	if strings.TrimSpace(f.from) == "" {
		return req, usage(errors.New("--from is required: the crowd actor that sends, such as alice@flood1.test"))
	}
	if err := pasture.CheckActorRef(f.from); err != nil {
		return req, usage(fmt.Errorf("--from %q: %v", f.from, err))
	}
	for _, t := range sendTypes() {
		if strings.EqualFold(strings.TrimSpace(f.typ), t) {
			req.Type = t
		}
	}
	if req.Type == "" {
		if f.typ == "" {
			return req, usage(fmt.Errorf("--type is required: %s", strings.Join(sendTypes(), ", ")))
		}
		return req, usage(fmt.Errorf("--type %q: want %s", f.typ, strings.Join(sendTypes(), ", ")))
	}
	if strings.TrimSpace(f.to) == "" {
		return req, usage(errors.New("--to is required: the target actor, acct:name@host or an actor URL"))
	}
	if err := pasture.CheckActorRef(f.to); err != nil {
		return req, usage(fmt.Errorf("--to %q: %v", f.to, err))
	}
	req.From, req.To = strings.TrimSpace(f.from), strings.TrimSpace(f.to)
	obj := strings.TrimSpace(f.object)
	switch req.Type {
	case "Like":
		if obj == "" {
			return req, usage(errors.New("--object is required for a Like: the URL of the post to like"))
		}
		if !apclient.IsHTTPURL(obj) {
			return req, usage(fmt.Errorf("--object %q: a Like needs the http(s) URL of the post", f.object))
		}
		req.Object, _ = json.Marshal(obj)
	case "Create":
		if obj != "" {
			if !strings.HasPrefix(obj, "{") || !json.Valid([]byte(obj)) {
				return req, usage(fmt.Errorf("--object for a Create is a JSON object to wrap (or leave it out for a generated Note); %q is not one", f.object))
			}
			req.Object = json.RawMessage(obj)
		}
	default:
		if obj != "" {
			return req, usage(fmt.Errorf("--object is for Like and Create, not %s", req.Type))
		}
	}
	if f.inboxURL != "" {
		if !apclient.IsHTTPURL(f.inboxURL) {
			return req, usage(fmt.Errorf("--inbox %q is not an http(s) URL", f.inboxURL))
		}
		req.Inbox = f.inboxURL
	}
	req.AllowPublicTarget = f.public
	req.Tamper = strings.TrimSpace(f.tamper)
	switch sig := strings.ToLower(strings.TrimSpace(f.sig)); sig {
	case "", "cavage", "rfc9421":
		req.Signature = sig
	default:
		return req, usage(fmt.Errorf("--signature %q: want cavage or rfc9421", f.sig))
	}
	if req.Tamper != "" && req.Signature == "rfc9421" {
		return req, usage(fmt.Errorf("--tamper %s with --signature rfc9421: a forged send is signed draft-cavage (leave --signature out)", req.Tamper))
	}
	return req, nil
}

func runSend(ctx context.Context, stdout io.Writer, f *sendFlags) error {
	req, err := f.request()
	if err != nil {
		return err
	}
	c, err := f.admin.client()
	if err != nil {
		return err
	}
	res, err := c.Send(ctx, req)
	if err != nil {
		if ae, ok := apiRefusal(err); ok {
			switch ae.Status {
			case http.StatusNotFound: // the API's "no such crowd actor": only the sender is looked up in the world
				return usage(fmt.Errorf("--from %q: %s", f.from, ae.Reason))
			case http.StatusForbidden: // a public target: the refusal names --allow-public-target
				return usage(fmt.Errorf("--to %q: %s", f.to, ae.Reason))
			case http.StatusBadGateway:
				return fmt.Errorf("the crowd could not reach the target: %s", ae.Reason)
			case http.StatusBadRequest:
				if err := tamperRefusal(req.Tamper, ae.Reason); err != nil {
					return err
				}
			}
			return fmt.Errorf("the crowd refused to send: %s", ae.Reason)
		}
		return err
	}
	if f.json {
		if err := printIndentedJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printSendResult(stdout, req, &res)
		printForged(stdout, res.Forged)
	}
	if res.Forged != nil {
		return forgedExit(&res)
	}
	if res.Status < 200 || res.Status > 299 {
		return exitCode{1, fmt.Errorf("%s answered HTTP %d to the %s, not 2xx", res.Inbox, res.Status, req.Type)}
	}
	return nil
}

// printSendResult shows a manual send as a person reads it: what went
// where, then what came back.
func printSendResult(w io.Writer, req adminapi.SendRequest, res *adminapi.SendResult) {
	fmt.Fprintf(w, "%s from %s to %s\n", req.Type, req.From, req.To)
	fmt.Fprintf(w, "POST %s\n", res.Inbox)
	if req.Signature == "rfc9421" {
		fmt.Fprintln(w, "(signed RFC 9421: Signature-Input, Signature, Content-Digest)")
	}
	fmt.Fprintln(w, indentedJSONText(res.Activity))
	switch {
	case res.Status == 0:
		fmt.Fprintf(w, "→ no answer after %s: %s\n", formatMS(res.DurationMS), res.Error)
	default:
		fmt.Fprintf(w, "→ %d %s in %s\n", res.Status, http.StatusText(res.Status), formatMS(res.DurationMS))
	}
	if body := bytes.TrimSpace([]byte(res.Body)); len(body) > 0 {
		fmt.Fprintln(w, indentedJSONText(body))
	}
}
