// Command bench measures the crowd against the ceilings of the machine it
// runs on, side by side in one run, and prints each figure beside its
// ceiling and the ratio, as a Markdown table (and JSON with -json):
//
//   - pipeline-signed flood: the highest rate it sustains against a null
//     sink, beside the in-process RSA-2048 signing ceiling on all cores;
//   - presigned flood vs vegeta (its v12 library) on the same null sink:
//     each one's maximum sustained rate, found by the same search;
//   - inbox: signature-verified deliveries/s through inbox.ServeHTTP vs a
//     bare net/http handler that only verifies the same requests;
//   - actor documents and WebFinger through the crowd's router vs a bare
//     net/http handler answering the same bytes;
//   - memory: peak RSS of a flood at 1 000/s; start-up of `crowd serve`
//     with persisted keys;
//   - how cost grows: rate ×2 → CPU per activity; origins ×10 → memory and
//     start-up.
//
// Run it from the repository with `go run ./bench` (see bench/README.md).
// Claims are ratios measured in one run on one machine: the pairs being
// compared are measured in rounds whose order is reversed every other
// round (A, B, B, A) and each side reports its median, so noise from a
// shared machine hits both sides.
//
// The bench re-executes itself as helper processes: the null sink (so a
// generator never shares a process with the server it floods) and the
// flood whose memory and CPU are measured (so getrusage and VmHWM see the
// flood alone). The environment variable CROWD_BENCH_CHILD selects them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

// childEnv names the environment variable that turns this binary into one
// of its helper processes ("sink" or "flood"); see runChild.
const childEnv = "CROWD_BENCH_CHILD"

func main() {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(runChild(mode, os.Args[1:], os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the bench and writes the table to stdout (progress
// to stderr). It returns the exit status: 0 when the bench ran (whether or
// not every target was met: the table says), 1 when it could not run, 2 for
// a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	b, err := newBench(ctx, cfg, args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer b.close()
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	rep := b.runAll(ctx)
	if err := rep.write(cfg, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "bench: interrupted; the table is partial")
		return 1
	}
	return 0
}
