package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/internal/childproc"
)

// floodArgs are the flood helper's arguments for a flood at rate for d.
func (b *bench) floodArgs(rate float64, d time.Duration) []string {
	return []string{"-state", worldDir(b.cfg.State, b.cfg.Origins, b.cfg.Actors),
		"-origins", strconv.Itoa(b.cfg.Origins), "-actors", strconv.Itoa(b.cfg.Actors), "-mix", b.cfg.Mix,
		"-sink", b.sinkAddr, "-rate", strconv.FormatFloat(rate, 'f', -1, 64), "-seconds", d.String(),
		"-dispatcher-priority", string(b.cfg.DispatcherPriority)}
}

// floodHelper runs one flood helper, bounded in time.
func (b *bench) floodHelper(ctx context.Context, rate float64, d time.Duration) (floodChildResult, error) {
	hctx, cancel := context.WithTimeout(ctx, d+2*time.Minute)
	defer cancel()
	r, err := runFloodHelper(hctx, b.floodArgs(rate, d)...)
	if err == nil {
		b.logf("  flood helper %5.0f/s for %v: %d sent, %d ok, CPU %.3f ms/activity, VmHWM %.1f MiB",
			rate, d, r.Sent, r.OK, r.CPUPerSentMS, kbToMiB(r.VmHWMKB))
	}
	return r, err
}

func kbToMiB(kb int64) float64 { return float64(kb) / 1024 }

// cpuSection: CPU per activity of a flood process (pipeline signing, null
// sink) at two rates, in rounds (roundOrder); and, without -long, the peak RSS of the
// higher-rate floods.
func (b *bench) cpuSection(ctx context.Context) {
	lo, hi := b.cfg.CPURates[0], b.cfg.CPURates[1]
	name := fmt.Sprintf("CPU per activity at %s vs %s (rate ×%.3g)", formatValue(hi, "/s"), formatValue(lo, "/s"), hi/lo)
	const target = "≤ 1.1 (cost per activity does not grow with the rate)"
	rssName := fmt.Sprintf("peak RSS of a %v flood at %s (pipeline signing, null sink)", b.cfg.CPUFloodLength, formatValue(hi, "/s"))
	var per [2][]float64
	var hwm []float64
	var late [2][]float64
	var runs []floodChildResult
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, len(b.cfg.CPURates)) {
			rate := b.cfg.CPURates[i]
			if ctx.Err() != nil {
				break
			}
			r, err := b.floodHelper(ctx, rate, b.cfg.CPUFloodLength)
			if err != nil {
				b.rep.fail(rowCPU, name, target, err)
				if !b.cfg.Long {
					b.rep.fail(rowRSS, rssName, "< 150 MiB", err)
				}
				return
			}
			runs = append(runs, r)
			per[i] = append(per[i], r.CPUPerSentMS)
			late[i] = append(late[i], r.LatenessP99MS)
			if i == 1 {
				hwm = append(hwm, kbToMiB(r.VmHWMKB))
			}
		}
	}
	b.rep.Details[rowCPU] = runs
	cLo, cHi := median(per[0]), median(per[1])
	row := Row{Key: rowCPU, Name: name, Value: cHi, Unit: "ms/activity", Ceiling: cLo,
		CeilingName: "at " + formatValue(lo, "/s"), Target: target}
	if cLo > 0 {
		row.Ratio = cHi / cLo
		row.Met = met(row.Ratio <= 1.1)
	}
	row.Notes = fmt.Sprintf("getrusage (user+sys) of a separate flood process over its run ÷ sends: generating, signing (pipeline) and sending to the null sink; %v per flood, median of %d rounds, the order reversed every other round; p99 lateness %s and %s (a late flood still sends every activity, later: the CPU per activity stands)",
		b.cfg.CPUFloodLength, len(per[1]), formatValue(median(late[1]), "ms"), formatValue(median(late[0]), "ms"))
	b.rep.set(row)
	if b.cfg.Long {
		b.longMemory(ctx)
		return
	}
	peak := median(hwm)
	b.rep.set(Row{Key: rowRSS, Name: rssName, Value: peak, Unit: "MiB", Ceiling: 150, CeilingName: "limit",
		Ratio: peak / 150, Target: "< 150 MiB", Met: met(peak < 150),
		Notes: fmt.Sprintf("VmHWM of the flood process (start-up included), median of %d; run with -long for %v at %s", len(hwm),
			b.cfg.LongFloodLength, formatValue(b.cfg.MemRate, "/s"))})
}

// longMemory: the peak RSS of a -long-seconds flood at -mem-rate.
func (b *bench) longMemory(ctx context.Context) {
	name := fmt.Sprintf("peak RSS of a %v flood at %s (pipeline signing, null sink)", b.cfg.LongFloodLength, formatValue(b.cfg.MemRate, "/s"))
	const target = "< 150 MiB"
	r, err := b.floodHelper(ctx, b.cfg.MemRate, b.cfg.LongFloodLength)
	if err != nil {
		b.rep.fail(rowRSS, name, target, err)
		return
	}
	b.rep.Details[rowRSS] = r
	peak := kbToMiB(r.VmHWMKB)
	b.rep.set(Row{Key: rowRSS, Name: name, Value: peak, Unit: "MiB", Ceiling: 150, CeilingName: "limit",
		Ratio: peak / 150, Target: target, Met: met(peak < 150),
		Notes: fmt.Sprintf("VmHWM of the flood process (start-up included); %d sent, %d answered 202, %d dropped, p99 lateness %s",
			r.Sent, r.OK, r.Dropped, formatValue(r.LatenessP99MS, "ms"))})
}

// startupSection: time from exec to /readyz 200 of `crowd serve` with
// persisted keys, and its peak RSS then, for Origins and Origins × Scale
// origins, in rounds (roundOrder).
func (b *bench) startupSection(ctx context.Context) {
	small, big := b.cfg.Origins, b.cfg.Origins*b.cfg.Scale
	nameStart := fmt.Sprintf("start-up of crowd serve, %d origins × %d actors, persisted keys (exec → /readyz 200)", small, b.cfg.Actors)
	nameScale := fmt.Sprintf("start-up, %d → %d origins (×%d)", small, big, b.cfg.Scale)
	nameMem := fmt.Sprintf("crowd serve peak RSS at ready, %d → %d origins (×%d)", small, big, b.cfg.Scale)
	scaleTarget := fmt.Sprintf("≤ %d (at most linear)", b.cfg.Scale)
	failAll := func(err error) {
		b.rep.fail(rowStartup, nameStart, "< 1 s", err)
		b.rep.fail(rowStartupScale, nameScale, scaleTarget, err)
		b.rep.fail(rowMemoryScale, nameMem, scaleTarget, err)
	}
	if b.crowdErr != nil {
		failAll(b.crowdErr)
		return
	}
	sizes := []int{small, big}
	// A first start makes the CA and each origin's certificate; it is not
	// a start "with persisted state", so it is reported apart.
	for _, n := range sizes {
		t, _, err := b.startupOnce(ctx, n)
		if err != nil {
			failAll(err)
			return
		}
		b.rep.note("first start of crowd serve with %d origins (creating the CA if missing; certificates are made per name on first use): %.0f ms", n, ms(t))
	}
	var times, mems [2][]float64
	for round := range b.cfg.Rounds {
		for _, i := range roundOrder(round, len(sizes)) {
			n := sizes[i]
			if ctx.Err() != nil {
				break
			}
			t, hwm, err := b.startupOnce(ctx, n)
			if err != nil {
				failAll(err)
				return
			}
			times[i] = append(times[i], ms(t))
			mems[i] = append(mems[i], kbToMiB(hwm))
			b.logf("  crowd serve, %4d origins: ready in %6.1f ms, VmHWM %.1f MiB", n, ms(t), kbToMiB(hwm))
		}
	}
	b.rep.Details[rowStartup] = map[string]any{"origins": sizes, "ms": times, "vmhwm_mib": mems}
	tS, tB := median(times[0]), median(times[1])
	mS, mB := median(mems[0]), median(mems[1])
	rounds := fmt.Sprintf("median of %d starts, the order reversed every other round", len(times[0]))
	b.rep.set(Row{Key: rowStartup, Name: nameStart, Value: tS, Unit: "ms", Ceiling: 1000, CeilingName: "limit",
		Ratio: tS / 1000, Target: "< 1 s", Met: met(tS < 1000),
		Notes: "the built binary, HTTPS on 127.0.0.1:0, no HTTP or DNS listener; " + rounds})
	row := Row{Key: rowStartupScale, Name: nameScale, Value: tB, Unit: "ms", Ceiling: tS,
		CeilingName: fmt.Sprintf("%d origins", small), Target: scaleTarget, Notes: rounds + "; keys are loaded (parsed and checked), never generated, here"}
	if tS > 0 {
		row.Ratio = tB / tS
		row.Met = met(row.Ratio <= float64(b.cfg.Scale))
	}
	b.rep.set(row)
	row = Row{Key: rowMemoryScale, Name: nameMem, Value: mB, Unit: "MiB", Ceiling: mS,
		CeilingName: fmt.Sprintf("%d origins", small), Target: scaleTarget, Notes: "VmHWM of crowd serve when /readyz first answers 200; " + rounds}
	if mS > 0 {
		row.Ratio = mB / mS
		row.Met = met(row.Ratio <= float64(b.cfg.Scale))
	}
	b.rep.set(row)
}

// startupOnce starts `crowd serve` for a world of origins whose keys are
// persisted, and returns the time from exec to its first /readyz 200 and
// its VmHWM then; the server is stopped before returning.
func (b *bench) startupOnce(ctx context.Context, origins int) (time.Duration, int64, error) {
	return b.serveReady(ctx, "--state", worldDir(b.cfg.State, origins, b.cfg.Actors),
		"--origins", strconv.Itoa(origins), "--actors", strconv.Itoa(b.cfg.Actors))
}

// serveReady starts `crowd serve` with the world flags world (its state
// persisted), HTTPS on 127.0.0.1:0 and no HTTP or DNS listener, and
// returns the time from exec to its first /readyz 200 and its VmHWM then;
// the server is stopped before returning.
func (b *bench) serveReady(ctx context.Context, world ...string) (time.Duration, int64, error) {
	admin, err := freeAddr()
	if err != nil {
		return 0, 0, err
	}
	// The world's flags come last: a flag given twice takes its last value,
	// so a row can turn on what these defaults leave off (--dns).
	args := append([]string{"serve", "--domain", benchDomain,
		"--https", "127.0.0.1:0", "--http", "", "--dns", "", "--admin", admin, "--log-level", "warn", "--log-format", "json"}, world...)
	cmd := exec.Command(b.crowd, args...)
	cmd.Env = cleanEnv()
	childproc.Tie(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	defer func() {
		if stopped {
			return
		}
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		resp, err := client.Get("http://" + admin + adminapi.RouteReady.Path())
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				ready := time.Since(t0)
				hwm, _ := procStatus(strconv.Itoa(cmd.Process.Pid))
				return ready, hwm, nil
			}
		}
		select {
		case err := <-exited:
			stopped = true
			return 0, 0, fmt.Errorf("crowd serve exited before it was ready (%v): %s", err, lastLines(stderr.String(), 3))
		case <-deadline.C:
			return 0, 0, errors.New("crowd serve was not ready within 30 s: " + lastLines(stderr.String(), 3))
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
