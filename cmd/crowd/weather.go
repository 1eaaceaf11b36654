package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/hostorder"
	"github.com/crowdfed/crowd/pasture/weather"
)

// weatherHelp is what --weather and `crowd weather set` take, for their help.
const weatherHelp = `rules KIND=TARGET[:PARAM[:PARAM]] joined by commas; TARGET a share of the origins (5%), or
origins joined by + (flood3.test+flood4.test), or @followers[:N] (the N origins with most of the SUT's followers); KIND:
  down                      connections reset (no answer)
  blackhole                 requests read, never answered (held up to 15 min)
  slow[:DELAY[:DOC_SHARE]]  deliveries answered after DELAY (30s, at most 1h), documents too at DOC_SHARE (0.5; 0: none)
  flaky[:P]                 502/503/504 with probability P (0.5) in (0, 1]
  limited[:RETRY_AFTER]     429 with Retry-After (60s, or 60: whole seconds) and X-RateLimit-*
  gone                      410 for everything (Tombstones for documents)
  nxdomain                  the crowd's DNS answers NXDOMAIN
  tls-expired, tls-wrong-name  an expired certificate, or one for wrong-name.invalid
(docs/weather.md)`

// weatherValue is --weather read once into a weather.Spec; a spec that
// cannot be read is refused as the flag is set, its error naming the rule.
type weatherValue struct{ s *weather.Spec }

func (v weatherValue) String() string {
	if v.s == nil {
		return ""
	}
	return v.s.String()
}

func (v weatherValue) Set(s string) error {
	spec, err := weather.ParseSpec(s)
	if err != nil {
		return err
	}
	*v.s = spec
	return nil
}

func (weatherValue) Type() string { return "spec" }

// checkWeatherOrigins refuses, before the world is opened (and a first
// start makes its keys), a --weather that lists an origin the world does
// not serve or asks more shares than it has; a spec ranking origins by
// followers waits for the world's graph.
func checkWeatherOrigins(spec weather.Spec, cfg actors.Config) error {
	if spec.IsClear() || spec.NeedsRanking() || cfg.Validate() != nil {
		return nil // a bad world configuration is reported as such when it opens
	}
	_, err := weather.Assign(spec, cfg.Hosts(), 1)
	return weatherUsage(err)
}

// weatherUsage is a usage error naming --weather for a spec the world
// cannot fill (an origin it lacks, more origins than it has), or err.
func weatherUsage(err error) error {
	if errors.Is(err, weather.ErrSpec) {
		return usage(fmt.Errorf("--weather: %w", err))
	}
	return err
}

// newWeatherCmd is `crowd weather`: the running crowd's weather.
func newWeatherCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "weather",
		Short: "Put the running crowd's origins in bad weather (down, slow, flaky…), show it, clear it",
		Long: `The weather of a running crowd serve's origins, changed at once without a restart (crowd serve
--weather sets it at the start). SPEC: ` + weatherHelp + `.`,
		Args: subcommandArgs,
		RunE: showHelp,
	}
	cmd.AddCommand(newWeatherSetCmd(), newWeatherShowCmd(), newWeatherClearCmd())
	return cmd
}

// weatherFlags are the flags of the weather subcommands.
type weatherFlags struct {
	admin adminFlags
	json  bool
}

func (f *weatherFlags) register(cmd *cobra.Command) {
	f.admin.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, "print the admin API's weather document (GET /api/weather) instead of the table")
}

func newWeatherSetCmd() *cobra.Command {
	f := &weatherFlags{}
	cmd := &cobra.Command{
		Use:   "set SPEC",
		Short: "Put SPEC in force over the running crowd's origins, in place of the weather before",
		Long:  "Put SPEC in force over the running crowd's origins at once, in place of the weather before.\nSPEC: " + weatherHelp + ".",
		Example: `  crowd weather set 'down=5%,slow=5%:30s,flaky=flood3.test:0.5'
  crowd weather set limited=flood2.test:60s`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 && !slices.ContainsFunc(args, func(a string) bool { return !strings.Contains(a, "=") }) {
				// Rules given apart, as a shell splits them at a space.
				return usage(fmt.Errorf("%s takes one SPEC, its rules joined by commas: %s", cmd.CommandPath(), strings.Join(args, ",")))
			}
			return exactArgsUsage(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := weather.ParseSpec(args[0]); err != nil {
				return usage(fmt.Errorf("%s %q: %w", cmd.CommandPath(), args[0], err)) // before asking the crowd: no serve is needed to hear it
			}
			return f.run(cmd, func(c *adminapi.Client) (adminapi.WeatherInfo, error) {
				info, err := c.SetWeather(cmd.Context(), args[0])
				if ae, ok := apiRefusal(err); ok && ae.Status == http.StatusBadRequest {
					return info, usage(fmt.Errorf("%s %q: %s", cmd.CommandPath(), args[0], ae.Reason)) // an origin this crowd does not serve
				}
				return info, err
			})
		},
	}
	f.register(cmd)
	return cmd
}

func newWeatherShowCmd() *cobra.Command {
	return newWeatherCallCmd("show", "Show the weather in force: each origin in weather with its condition and what the weather has answered for it since the crowd started (across changes), and the counts",
		(*adminapi.Client).Weather)
}

func newWeatherClearCmd() *cobra.Command {
	return newWeatherCallCmd("clear", "Clear the weather: every origin answers as a healthy server again",
		(*adminapi.Client).ClearWeather)
}

// newWeatherCallCmd is a weather subcommand that takes no argument: it
// makes one call of the admin API and prints the weather answered.
func newWeatherCallCmd(use, short string, call func(*adminapi.Client, context.Context) (adminapi.WeatherInfo, error)) *cobra.Command {
	f := &weatherFlags{}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgsUsage,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *adminapi.Client) (adminapi.WeatherInfo, error) { return call(c, cmd.Context()) })
		},
	}
	f.register(cmd)
	return cmd
}

// run calls the admin API with call and prints the weather it answers.
func (f *weatherFlags) run(cmd *cobra.Command, call func(*adminapi.Client) (adminapi.WeatherInfo, error)) error {
	c, err := f.admin.client()
	if err != nil {
		return err
	}
	info, err := call(c)
	if err != nil {
		return err
	}
	if f.json {
		return printIndentedJSON(cmd.OutOrStdout(), info)
	}
	return writeWeather(cmd.OutOrStdout(), info)
}

// writeWeather prints the weather as a table of the origins in weather
// (and of those clear now whose weather answered anything before), with
// what the weather answered for each, then the spec, since when, and the
// counts in the kinds' order.
func writeWeather(w io.Writer, info adminapi.WeatherInfo) error {
	rows := slices.Clone(info.Origins)
	for _, h := range slices.SortedFunc(maps.Keys(info.Answered), hostorder.Compare) {
		if answeredText(info.Answered[h]) != "-" && !slices.ContainsFunc(rows, func(o adminapi.WeatherOrigin) bool { return o.Host == h }) {
			rows = append(rows, adminapi.WeatherOrigin{Host: h, Condition: weather.Clear.String()})
		}
	}
	if len(rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		// The counters run from the crowd's start across changes: an
		// origin clear now shows what its earlier weather answered.
		fmt.Fprintln(tw, "ORIGIN\tCONDITION\tANSWERED SINCE THE CROWD STARTED")
		for _, o := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Host, o.Condition, answeredText(info.Answered[o.Host]))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	spec := info.Spec
	if spec == "" {
		spec = "clear"
	}
	var counts []string
	for _, k := range append([]weather.Kind{weather.Clear}, weather.Kinds()...) {
		if n := info.Counts[k.String()]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", k, n))
		}
	}
	_, err := fmt.Fprintf(w, "weather %s since %s; of %d origins: %s\n", spec,
		info.Since.UTC().Format(time.DateTime), info.Served, strings.Join(counts, ", "))
	return err
}

// answeredText is what the weather answered for one origin, its non-zero
// counters in the order of the wire ("lookups 2, deliveries 5"); "-" for
// none.
func answeredText(a adminapi.WeatherAnswered) string {
	var parts []string
	for _, c := range []struct {
		name string
		n    int64
	}{{"lookups", a.Lookups}, {"connections", a.Connections}, {"handshakes", a.Handshakes},
		{"deliveries", a.Deliveries}, {"documents", a.Documents}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.name, c.n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
