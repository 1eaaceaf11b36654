package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/signing"
)

// bench is one run: its configuration, the world whose actors sign, the
// null sink, the crowd binary, and the report being filled.
type bench struct {
	cfg      config
	log      io.Writer // progress lines
	start    time.Time
	tmp      string        // this run's scratch directory, removed at the end
	world    *actors.World // Origins × Actors, keys under cfg.State
	sink     *child
	sinkAddr string
	crowd    string     // the crowd binary for the start-up rows
	crowdErr error      // why there is none
	wrk      *wrkClient // the closed-loop rows' client; nil: the Go client
	rep      *Report
	lcWorld  *actors.World // the same world signing with libcrypto (libcryptoWorld)
	lcErr    error         // why there is none
}

// newBench prepares a run: keys (generated once under cfg.State), the null
// sink, and the crowd binary. Only a failure to open the world or start the
// sink stops the bench; a crowd that does not build fails its rows alone.
func newBench(ctx context.Context, cfg config, args []string, log io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, log: log, start: time.Now(),
		rep: &Report{Started: time.Now().UTC(), Machine: newMachine(), Details: map[string]any{}}}
	b.rep.Command = strings.TrimSpace("go run ./bench " + strings.Join(args, " "))
	var err error
	if b.tmp, err = os.MkdirTemp("", "crowd-bench-"); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			b.close()
		}
	}()
	b.logf("load average %s; keys in %s", orDash(b.rep.Machine.LoadBefore), cfg.State)
	b.rep.Machine.Kernel = measureKernelCosts(kernelFaultPages, kernelSyscalls, kernelRoundTrips)
	b.logf("kernel entries: %s", b.rep.Machine.Kernel)
	switch cfg.Client {
	case clientWrk:
		if b.wrk, err = findWrk(ctx); err != nil {
			return nil, fmt.Errorf("-client wrk: %w", err)
		}
	case clientAuto:
		if b.wrk, err = findWrk(ctx); err != nil {
			b.rep.note("closed-loop rows measured by the Go client in the bench's process: no wrk (%v)", err)
		}
	}
	if b.wrk != nil {
		b.logf("closed-loop client: %s (%s)", b.wrk.version, b.wrk.path)
	}
	if b.world, err = b.prepareWorld(cfg.Origins); err != nil {
		return nil, err
	}
	// The ×Scale world is for the start-up rows only: its keys are made
	// now, outside every measurement, and it is closed at once.
	if w, err := b.prepareWorld(cfg.Origins * cfg.Scale); err != nil {
		b.rep.note("the %d-origin world could not be prepared: %v", cfg.Origins*cfg.Scale, err)
	} else {
		w.Close()
	}
	if b.sink, b.sinkAddr, err = startSink(); err != nil {
		return nil, err
	}
	b.cfg.sinkPID = b.sink.cmd.Process.Pid
	b.logf("null sink (a separate process) on %s", b.sinkAddr)
	b.crowd, b.crowdErr = b.buildCrowd(ctx)
	ok = true
	return b, nil
}

// close stops the sink and removes the scratch directory.
func (b *bench) close() {
	if b.sink != nil {
		b.sink.stop()
		b.sink = nil
	}
	if b.world != nil {
		b.world.Close()
		b.world = nil
	}
	if b.lcWorld != nil {
		b.lcWorld.Close()
		b.lcWorld = nil
	}
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
		b.tmp = ""
	}
}

// logf prints a progress line on the log, stamped with the run's time.
func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "[%5.1fs] %s\n", time.Since(b.start).Seconds(), fmt.Sprintf(format, args...))
}

// prepareWorld opens the world of origins × cfg.Actors under cfg.State,
// generating the keys it lacks (timed, and said in a note).
func (b *bench) prepareWorld(origins int) (*actors.World, error) {
	dir := worldDir(b.cfg.State, origins, b.cfg.Actors)
	before := countKeys(dir)
	t0 := time.Now()
	w, err := openWorld(dir, origins, b.cfg.Actors, signing.GoBackend())
	if err != nil {
		return nil, err
	}
	took := time.Since(t0)
	total := origins * (b.cfg.Actors + 1)
	if made := countKeys(dir) - before; made > 0 {
		b.rep.note("keys: %d RSA-2048 keys for %d origins × %d actors (+ instance actors) generated in %.1f s on %d cores, once: later runs with the same -state reuse them",
			made, origins, b.cfg.Actors, took.Seconds(), runtime.GOMAXPROCS(0))
		b.logf("generated %d keys for %d origins in %.1f s", made, origins, took.Seconds())
	} else {
		b.rep.note("keys: %d keys for %d origins reused from -state (loaded in %.0f ms)", total, origins, ms(took))
	}
	return w, nil
}

// countKeys counts the key files under dir/keys.
func countKeys(dir string) int {
	n := 0
	filepath.WalkDir(filepath.Join(dir, "keys"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".pem") {
			n++
		}
		return nil
	})
	return n
}

// buildCrowd returns -crowd, or builds cmd/crowd into the scratch directory.
func (b *bench) buildCrowd(ctx context.Context) (string, error) {
	if b.cfg.Crowd != "" {
		return b.cfg.Crowd, nil
	}
	out := filepath.Join(b.tmp, "crowd")
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/crowdfed/crowd/cmd/crowd")
	cmd.Env = cleanEnv()
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/crowd: %v: %s", err, lastLines(string(msg), 4))
	}
	b.logf("built the crowd binary in %.1f s", time.Since(t0).Seconds())
	return out, nil
}

// sectionNames are the keys of runAll's sections, for -only.
func sectionNames() []string {
	return []string{"pipeline", "presigned", "inbox", "documents", "cpu", "startup", "backends", "onecore", "priority", "inbox-backends", "scale", "livemetrics", "results", "verbs", "weather"}
}

// runAll runs every section in order (those of -only when set) and returns the report.
func (b *bench) runAll(ctx context.Context) *Report {
	sections := []struct {
		key, name string
		run       func(context.Context)
	}{
		{"pipeline", "signing ceiling and pipeline-signed flood", b.pipelineSection},
		{"presigned", "presigned flood vs vegeta", b.presignedSection},
		{"inbox", "inbox vs bare verifier", b.inboxSection},
		{"documents", "documents vs bare handler", b.documentsSection},
		{"cpu", "CPU per activity (rate ×2) and memory", b.cpuSection},
		{"startup", "start-up (origins ×10)", b.startupSection},
		{"backends", "signing backends: ceilings and pipeline floods, Go vs libcrypto", b.backendsSection},
		{"onecore", "pipeline flood with libcrypto pinned to one core", b.oneCoreSection},
		{"priority", "real-time dispatcher vs the normal policy: the pipeline's maximum, a presigned flood's latency at 8 000/s", b.prioritySection},
		{"inbox-backends", "inbox verifying with libcrypto vs bare and vs Go", b.inboxBackendsSection},
		{"scale", "a large world (-large-origins): start-up, TLS per SNI name, DNS", b.scaleSection},
		{"livemetrics", "pipeline-signed flood with and without live metrics", b.liveMetricsSection},
		{"results", "pipeline-signed and presigned floods with and without --results", b.resultsSection},
		{"verbs", "the vocabulary's cost per send beside Create's", b.verbsSection},
		{"weather", "documents and inbox with 10 % of origins in weather vs clear", b.weatherSection},
	}
	for _, s := range sections {
		if ctx.Err() != nil {
			break
		}
		if len(b.cfg.Only) > 0 && !slices.Contains(b.cfg.Only, s.key) {
			continue
		}
		b.logf("== %s", s.name)
		runtime.GC()
		// What earlier sections left in the process shares its CPUs with
		// this one's floods (a heap to mark, goroutines to run): logged, so
		// a section that does worse in a whole run than alone can be read.
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.logf("  the process before it: %.0f MiB of heap in use, %d goroutines", float64(ms.HeapAlloc)/(1<<20), runtime.NumGoroutine())
		s.run(ctx)
	}
	b.rep.Seconds = time.Since(b.start).Seconds()
	b.rep.Machine.LoadAfter = loadAvg()
	b.logf("done; load average %s", orDash(b.rep.Machine.LoadAfter))
	return b.rep
}
