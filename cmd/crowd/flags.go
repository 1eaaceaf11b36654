package main

import (
	"fmt"
	"io"
	"os"
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
