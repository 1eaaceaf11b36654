package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// envPrefix prefixes the environment variable of every flag: --dns-record
// reads CROWD_DNS_RECORD, so a compose file can configure the crowd.
const envPrefix = "CROWD_"

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// fromEnv is the annotation bindEnv puts on a flag it set from the
// environment (see onCommandLine).
const fromEnv = "crowd-from-env"

// bindEnv fills every flag the command line did not set from its
// CROWD_<FLAG> variable, and annotates those it fills fromEnv; a list flag
// takes a comma-separated value. A bad value is a usage error naming both
// the variable and the flag.
func bindEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed {
			return
		}
		v, ok := os.LookupEnv(envName(f.Name))
		if !ok {
			return
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[fromEnv] = []string{envName(f.Name)}
		if sv, isSlice := f.Value.(pflag.SliceValue); isSlice {
			var items []string
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					items = append(items, s)
				}
			}
			if e := sv.Replace(items); e != nil {
				err = usage(fmt.Errorf("%s: %v", envName(f.Name), valueError(f, v, e)))
			}
			f.Changed = true
			return
		}
		// The value read first, for its own error (FlagSet.Set words it
		// as pflag does), then set as the command line sets it.
		if e := f.Value.Set(v); e != nil {
			err = usage(fmt.Errorf("%s: %v", envName(f.Name), valueError(f, v, e)))
			return
		}
		if e := cmd.Flags().Set(f.Name, v); e != nil {
			err = usage(fmt.Errorf("%s: %v", envName(f.Name), e))
		}
	})
	return err
}

// misspeltEnv says, for each CROWD_ variable in environ that no flag of
// any command reads but that is a slip away from one that does
// (CROWD_ORIGN for CROWD_ORIGINS), which one it likely meant: a compose
// file's typo is otherwise ignored without a word. Variables the crowd
// reads that are no flag's (CROWD_TOKEN_<NAME>, the build's and the tests'
// own) are no slip; nor is a variable near none, which may be anyone's.
func misspeltEnv(root *cobra.Command, environ []string) []string {
	known := map[string]string{} // variable → its flag
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.PersistentFlags(), c.Flags()} {
			fs.VisitAll(func(f *pflag.Flag) { known[envName(f.Name)] = f.Name })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, envPrefix)
		if !ok || known[name] != "" || notAFlagsVariable(rest) {
			continue
		}
		limit := 1
		if len(rest) >= 5 {
			limit = 2
		}
		best, bestDistance := "", limit+1
		for v := range known {
			if d := editDistance(name, v); d < bestDistance || (d == bestDistance && v < best) {
				best, bestDistance = v, d
			}
		}
		if best != "" {
			out = append(out, fmt.Sprintf("%s is set, but no flag reads it: did you mean %s (--%s)?", name, best, known[best]))
		}
	}
	slices.Sort(out)
	return out
}

// notAFlagsVariable reports whether CROWD_<rest> is a variable the crowd,
// its build or its tests read for themselves, not a flag's.
func notAFlagsVariable(rest string) bool {
	for _, prefix := range []string{"TOKEN_", "CI_", "TEST_", "BENCH_", "E2E_", "OPENSSL_", "RECORD_"} {
		if strings.HasPrefix(rest, prefix) {
			return true
		}
	}
	return rest == "BIN" || rest == "IMAGE"
}

// fromScenario is the annotation scenarioFlags.apply puts on a flag it
// set from --scenario (see onCommandLine).
const fromScenario = "crowd-from-scenario"

// onCommandLine reports whether the command line itself set flag name:
// Changed, as a flag bindEnv or a scenario filled is too, and neither from
// the environment nor from --scenario. A variable the image sets for every
// command (CROWD_STATE, and compose's CROWD_ADMIN) is no choice made for
// this one command, and a preset's setting (the forgery preset's
// --tamper-share, left when --tamper= takes its forgeries away) no mistake
// of the user's.
func onCommandLine(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Changed && f.Annotations[fromEnv] == nil && f.Annotations[fromScenario] == nil
}

// globalOptions are the flags every command shares.
type globalOptions struct {
	logLevel  string
	logFormat string
	crypto    string // --crypto: the signing backend (crypto.go)
}

func (g *globalOptions) register(root *cobra.Command) {
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "auto", "log format: console, json, or auto (console on a terminal, JSON otherwise)")
	g.registerCrypto(root)
}

// check refuses a bad --log-level or --log-format (a usage error) before
// any command runs, also those that log nothing.
func (g *globalOptions) check() error {
	if _, err := zapcore.ParseLevel(g.logLevel); err != nil {
		return usage(fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel))
	}
	if err := g.checkCrypto(); err != nil {
		return err
	}
	switch g.logFormat {
	case "auto", "json", "console":
		return nil
	}
	return usage(fmt.Errorf("--log-format %q: want console, json or auto", g.logFormat))
}

// logger builds the zap logger the flags ask for, writing to stderr (the
// command's error stream, so a test's runs do not share one).
func (g *globalOptions) logger(stderr io.Writer) (*zap.Logger, error) {
	if err := g.check(); err != nil {
		return nil, err
	}
	level, _ := zapcore.ParseLevel(g.logLevel)
	format := g.logFormat
	if format == "auto" {
		format = "json"
		if isTerminal(stderr) {
			format = "console"
		}
	}
	var cfg zap.Config
	var enc zapcore.Encoder
	switch format {
	case "json":
		cfg = zap.NewProductionConfig()
		enc = zapcore.NewJSONEncoder(cfg.EncoderConfig)
	default: // console
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		cfg.DisableStacktrace = true
		enc = zapcore.NewConsoleEncoder(cfg.EncoderConfig)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	// Build keeps the config's options (caller, stack traces, development);
	// the core is swapped for one that writes to stderr instead of the
	// process's standard error, which Build would open by name.
	sink := zapcore.Lock(zapcore.AddSync(stderr))
	return cfg.Build(zap.ErrorOutput(sink), zap.WrapCore(func(zapcore.Core) zapcore.Core {
		return zapcore.NewCore(enc, sink, cfg.Level)
	}))
}

// isTerminal reports whether w is a real terminal: a file that is a
// character device. Any other writer (a buffer, a pipe) is not.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
