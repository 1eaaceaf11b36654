package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// warn says one of the CLI's own warnings on cmd's error stream, as say
// does, the plain line led by the command's name.
func warn(cmd *cobra.Command, msg string) { say(cmd, zapcore.WarnLevel, cmd.CommandPath(), msg) }

// say writes one line of the CLI's own (a warning, the error a command
// ended with) to cmd's error stream: a JSON log line at level when JSON
// logs were asked for by name (--log-format json, CROWD_LOG_FORMAT=json,
// as a fleet's pods are), so their log collector reads every line; else
// the plain line "prefix: msg", for a person or a script, also where auto
// makes the logs JSON off a terminal.
func say(cmd *cobra.Command, level zapcore.Level, prefix, msg string) {
	w := cmd.ErrOrStderr()
	if logFormat(cmd) == "json" {
		g := globalOptions{logLevel: "debug", logFormat: "json"}
		if log, err := g.logger(w); err == nil {
			log = log.WithOptions(zap.WithCaller(false), zap.AddStacktrace(zapcore.FatalLevel))
			log.Check(level, msg).Write(zap.String("command", cmd.CommandPath()))
			return
		}
	}
	fmt.Fprintf(w, "%s: %s\n", prefix, msg)
}

// presetLogFormat sets --log-format from the command line before cobra
// parses it, so that a refusal of the command line (an unknown command or
// flag, before or after --log-format) is said in the format asked for:
// the parse stops at the refused word, and the flags after it are never
// read. A command line without it leaves the flag as it is.
func presetLogFormat(root *cobra.Command, args []string) {
	for i, a := range args {
		if a == "--" {
			return
		}
		v, ok := strings.CutPrefix(a, "--log-format=")
		if !ok && a == "--log-format" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			// A value the flag refuses is refused again, by name, when cobra parses it.
			_ = root.PersistentFlags().Set("log-format", v)
		}
	}
}

// logFormat is the --log-format cmd runs with: the command line's, else
// the environment's. The environment is read here too, since a command
// line the flags refused (an unknown flag) never reached bindEnv, and its
// error is said all the same.
func logFormat(cmd *cobra.Command) string {
	f := cmd.Flags().Lookup("log-format")
	if f == nil {
		f = cmd.Root().PersistentFlags().Lookup("log-format")
	}
	if f != nil && f.Changed {
		return f.Value.String()
	}
	if v, ok := os.LookupEnv(envName("log-format")); ok {
		return v
	}
	if f != nil {
		return f.Value.String()
	}
	return ""
}
