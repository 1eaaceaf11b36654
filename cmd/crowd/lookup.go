package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/pasture"
)

type lookupFlags struct {
	admin  adminFlags
	json   bool
	public bool
}

func newLookupCmd() *cobra.Command {
	f := &lookupFlags{}
	cmd := &cobra.Command{
		Use:   "lookup acct:name@host|URL",
		Short: "Fetch an actor as a real server would (WebFinger, signed GET) and list what a real server would object to",
		Long: `Ask the running ` + "`crowd serve`" + ` (its admin API, --admin) to look an actor up the way Mastodon,
GoToSocial or Fedify would: WebFinger for an account, a GET signed by a crowd instance actor,
and the WebFinger round trip back from the document's preferredUsername. Prints the document
pretty-printed and every problem a real server would object to. Every host it names must
resolve to loopback or a private network unless --allow-public-target (the GET is signed by a
crowd actor). Exits 1 when there are problems or the fetch failed, 2 for a refused resource.`,
		Example: `  crowd lookup acct:admin@sut.test
  crowd lookup https://sut.test/users/admin --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usage(fmt.Errorf("crowd lookup takes one actor, acct:name@host or a URL; got %d arguments", len(args)))
			}
			if err := pasture.CheckActorRef(args[0]); err != nil {
				return usage(fmt.Errorf("crowd lookup %q: %v", args[0], err))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLookup(cmd.Context(), cmd.OutOrStdout(), f, args[0])
		},
	}
	f.admin.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the admin API's answer as JSON")
	cmd.Flags().BoolVar(&f.public, "allow-public-target", false, "let the lookup reach hosts that resolve to public addresses")
	return cmd
}

func runLookup(ctx context.Context, stdout io.Writer, f *lookupFlags, resource string) error {
	c, err := f.admin.client()
	if err != nil {
		return err
	}
	res, err := c.Lookup(ctx, adminapi.LookupQuery{Resource: resource, AllowPublicTarget: f.public})
	if err != nil {
		// A malformed resource, or a public one: the refusal names --allow-public-target.
		if ae, ok := apiRefusal(err); ok && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusForbidden) {
			return usage(fmt.Errorf("crowd lookup %q: %s", resource, ae.Reason))
		}
		return err
	}
	if f.json {
		if err := printIndentedJSON(stdout, res); err != nil {
			return err
		}
	} else {
		printLookupResult(stdout, &res)
	}
	if n := len(res.Problems); n > 0 {
		return exitCode{1, fmt.Errorf("%s: %d %s a real server would object to", resource, n, record.Plural(n, "problem", "problems"))}
	}
	return nil
}

// printLookupResult shows a lookup as a person reads it: the way to the
// document, the document, then the problems.
func printLookupResult(w io.Writer, res *adminapi.LookupResult) {
	if res.WebFinger != nil {
		answer := res.WebFinger
		if res.WebFingerRedirect != nil {
			// The account's answer named another, which was asked in turn.
			fmt.Fprintf(w, "WebFinger %s → subject %s, asked in turn\n", res.Resource, res.WebFinger.Subject)
			answer = res.WebFingerRedirect
		}
		self := answer.Self()
		if self == "" {
			self = "(no ActivityPub self link)"
		}
		fmt.Fprintf(w, "WebFinger %s → %s\n", cmp.Or(answer.Subject, "(no subject)"), self)
	}
	if res.Status != 0 {
		fmt.Fprintf(w, "GET %s → %d %s", res.URL, res.Status, res.ContentType)
		if res.FinalURL != "" && res.FinalURL != res.URL {
			fmt.Fprintf(w, " (redirected to %s)", res.FinalURL)
		}
		fmt.Fprintln(w)
	}
	if len(res.Document) > 0 {
		fmt.Fprintln(w, indentedJSONText(res.Document))
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(res.Problems) == 0 {
		fmt.Fprintln(w, "no problems: a real server would accept this actor")
		return
	}
	fmt.Fprintf(w, "%d %s a real server would object to:\n", len(res.Problems), record.Plural(len(res.Problems), "problem", "problems"))
	for _, p := range res.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}
