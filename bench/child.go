package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
	"github.com/crowdfed/crowd/internal/childproc"
)

// Helper processes. The bench re-executes its own binary with childEnv set
// to one of these modes.
const (
	// childSink is the null sink: a loopback HTTP server answering every
	// request 202 with an empty body, after reading the request's body. It
	// prints its address on stdout and runs until its stdin closes.
	childSink = "sink"
	// childFlood is a flood with pipeline signing against a null sink, whose
	// CPU time (getrusage) and peak RSS (VmHWM) are its own; it prints a
	// floodChildResult as JSON on stdout.
	childFlood = "flood"
)

// runChild runs helper process mode with args; it returns the exit status.
func runChild(mode string, args []string, stdout, stderr io.Writer) int {
	var err error
	switch mode {
	case childSink:
		err = runSink(os.Stdin, stdout)
	case childFlood:
		err = runFloodChild(args, stdout)
	default:
		err = fmt.Errorf("unknown helper mode %q in %s", mode, childEnv)
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench %s: %v\n", mode, err)
		return 1
	}
	return 0
}

// runSink serves the null sink on 127.0.0.1:0 until stdin reaches EOF (the
// bench closed it, or died).
func runSink(stdin io.Reader, stdout io.Writer) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read the body as any server must before answering on a
			// keep-alive connection; answer nothing but the status.
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusAccepted)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	go srv.Serve(l)
	if _, err := fmt.Fprintln(stdout, l.Addr().String()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, stdin)
	return srv.Close()
}

// floodChildResult is what a flood helper reports. CPU times are getrusage
// deltas over the run alone (start-up and the pipeline's first fill
// excluded); VmHWM is the process's peak resident set, start-up included.
type floodChildResult struct {
	Rate          float64 `json:"rate"`
	Seconds       float64 `json:"seconds"`
	Offered       int64   `json:"offered"`
	Sent          int64   `json:"sent"`
	OK            int64   `json:"ok"`
	Dropped       int64   `json:"dropped"`
	Starved       int64   `json:"starved"`
	UserSeconds   float64 `json:"user_seconds"`
	SysSeconds    float64 `json:"sys_seconds"`
	CPUPerSentMS  float64 `json:"cpu_per_sent_ms"`
	LatenessP99MS float64 `json:"lateness_p99_ms"`
	VmHWMKB       int64   `json:"vmhwm_kb"`
	VmRSSKB       int64   `json:"vmrss_kb"`
	OpenMS        float64 `json:"open_ms"` // loading the world (keys)
}

// runFloodChild floods the null sink with pipeline signing, as `crowd
// flood --signing=pipeline` does, and reports its own resource use.
func runFloodChild(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	state := fs.String("state", "", "world state directory (keys)")
	origins := fs.Int("origins", 20, "origins")
	nactors := fs.Int("actors", 10, "actors per origin")
	mix := fs.String("mix", "create=6,like=3", "activity mix")
	sink := fs.String("sink", "", "null sink address")
	rate := fs.Float64("rate", 1000, "sends per second")
	seconds := fs.Duration("seconds", 5*time.Second, "length of the run")
	nice := traffic.NiceAuto
	fs.Func("signer-nice", "nice value of the signer threads, as crowd flood --signer-nice (default auto)", func(v string) (err error) {
		nice, err = traffic.ParseSignerNice(v)
		return err
	})
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run (not of start-up) to this file")
	priority := fs.String("dispatcher-priority", "", "the dispatcher thread's priority, as crowd flood --dispatcher-priority")
	if err := fs.Parse(args); err != nil {
		return err
	}
	t0 := time.Now()
	world, err := openWorld(*state, *origins, *nactors, nil)
	if err != nil {
		return err
	}
	defer world.Close()
	openMS := ms(time.Since(t0))
	gen, err := newGenerator(world, *mix, sinkTarget(*sink))
	if err != nil {
		return err
	}
	defer traffic.PipelineRuntime(0)() // as crowd flood runs a pipeline
	pl := traffic.NewPipeline(gen, newSigner(), traffic.PipelineOptions{Buffer: traffic.PipelineBuffer(*rate), Nice: nice})
	defer pl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = pl.Fill(ctx)
	cancel()
	if err != nil {
		return fmt.Errorf("filling the pipeline: %w", err)
	}
	pacer, err := flood.NewConstantPacer(*rate)
	if err != nil {
		return err
	}
	tr := flood.NewTransport(flood.DefaultMaxInflight, 0, nil)
	defer tr.CloseIdleConnections()
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	rec := record.NewRecorder(record.RecorderOptions{})
	err = flood.Run(context.Background(), flood.Plan{Limits: flood.Limits{Duration: *seconds}, Pacer: pacer, Source: pl, Transport: tr,
		Priority: flood.Priority(*priority)}, rec)
	res := rec.Result()
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		return err
	}
	c := res.Overall.Counts
	r := floodChildResult{
		Rate: *rate, Seconds: seconds.Seconds(),
		Offered: c.Offered, Sent: c.Sent, OK: res.Overall.Tally.OK(), Dropped: c.Dropped, Starved: c.Starved,
		UserSeconds:   tvSeconds(after.Utime) - tvSeconds(before.Utime),
		SysSeconds:    tvSeconds(after.Stime) - tvSeconds(before.Stime),
		LatenessP99MS: usToMS(res.Overall.Lateness.ValueAtQuantile(99)),
		OpenMS:        openMS,
	}
	if c.Sent > 0 {
		r.CPUPerSentMS = 1000 * (r.UserSeconds + r.SysSeconds) / float64(c.Sent)
	}
	r.VmHWMKB, r.VmRSSKB = procStatus("self")
	return json.NewEncoder(stdout).Encode(r)
}

func tvSeconds(tv syscall.Timeval) float64 { return float64(tv.Sec) + float64(tv.Usec)/1e6 }

// procStatus reads VmHWM and VmRSS (kB) of process pid ("self" for this
// one) from /proc; zeros where there is no /proc.
func procStatus(pid string) (hwmKB, rssKB int64) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmHWM":
			hwmKB = n
		case "VmRSS":
			rssKB = n
		}
	}
	return hwmKB, rssKB
}

// child is a running helper process.
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
}

// startChild starts this binary as helper mode with args.
func startChild(mode string, args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(cleanEnv(), childEnv+"="+mode)
	childproc.Tie(cmd)
	c := &child{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = c.stderr
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.stdout = bufio.NewReader(out)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return c, nil
}

// wait waits for the child to exit (within ctx; then it is killed) after
// reading all of its stdout, which it returns.
func (c *child) wait(ctx context.Context) ([]byte, error) {
	c.stdin.Close()
	type read struct {
		b   []byte
		err error
	}
	ch := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(c.stdout)
		ch <- read{b, err}
	}()
	var r read
	select {
	case r = <-ch:
	case <-ctx.Done():
		c.cmd.Process.Kill()
		r = <-ch
	}
	err := c.cmd.Wait()
	if err != nil {
		return r.b, fmt.Errorf("%w: %s", err, strings.TrimSpace(lastLines(c.stderr.String(), 5)))
	}
	return r.b, r.err
}

// stop ends a long-running child (the sink): closing its stdin asks it to
// exit; it is killed if it has not within a few seconds.
func (c *child) stop() {
	c.stdin.Close()
	exited := make(chan struct{})
	go func() {
		c.cmd.Wait()
		close(exited)
	}()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-exited
	}
}

// startSink starts the null sink and returns it with its address.
func startSink() (*child, string, error) {
	c, err := startChild(childSink)
	if err != nil {
		return nil, "", err
	}
	line, err := c.stdout.ReadString('\n')
	addr := strings.TrimSpace(line)
	if err != nil || addr == "" {
		c.stop()
		return nil, "", fmt.Errorf("the null sink did not start: %v %s", err, c.stderr.String())
	}
	return c, addr, nil
}

// runFloodHelper runs a flood helper and returns its report.
func runFloodHelper(ctx context.Context, args ...string) (floodChildResult, error) {
	var r floodChildResult
	c, err := startChild(childFlood, args...)
	if err != nil {
		return r, err
	}
	out, err := c.wait(ctx)
	if err != nil {
		return r, fmt.Errorf("flood helper: %w", err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("flood helper printed %q: %w", lastLines(string(out), 3), err)
	}
	return r, nil
}

// cleanEnv is this process's environment less the CROWD_ variables, which
// would change the flags of a helper or of `crowd serve`.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CROWD_") {
			env = append(env, kv)
		}
	}
	return env
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
