package flood

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/internal/childproc"
)

// TestCheckpointsMidRun: a 12 s run at 100/s (1 s warm-up) into a SUT that
// takes 150 ms, so about 15 sends are in flight at any moment. Checkpoints
// come at the first tick at or after each multiple of CheckpointEvery, never
// for the end, and each is a consistent snapshot: Offered = Sent + Dropped,
// Sent >= Completed + Aborted with the difference no more than what can be
// in flight, histograms holding exactly the completed sends, the timeline
// and measured window up to that second. A checkpoint is the callee's: the
// run going on does not change it.
func TestCheckpointsMidRun(t *testing.T) {
	for _, tc := range []struct {
		name  string
		every time.Duration
		at    []int // seconds of the checkpoints
	}{
		// Zero takes DefaultCheckpointEvery; the run ends before a third.
		{"the default is every 5 s", 0, []int{5, 10}},
		// The tick at 12 s comes while the last sends are in flight: a checkpoint too.
		{"every 2 s, the last tick included", 2 * time.Second, []int{2, 4, 6, 8, 10, 12}},
		// 1.5, 3, 4.5 … each taken at the first whole second at or after it.
		{"a fraction of a second rounds to the next tick", 1500 * time.Millisecond, []int{2, 3, 5, 6, 8, 9, 11, 12}},
		// A period longer than the run: only the final result.
		{"longer than the run: none", 20 * time.Second, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const svc = 150 * time.Millisecond
				rt := rtFunc(func(req *http.Request) (*http.Response, error) {
					time.Sleep(svc)
					return answer(req, 202, nil), nil
				})
				var cps []*record.Result
				var timelineAt []int // len(Timeline) when each was taken
				res, err := recordedWith(context.Background(), Plan{Limits: Limits{Duration: 12 * time.Second, Warmup: time.Second, MaxInflight: 100},
					Sleep:  time.Sleep, // synctest: fake clock
					Pacer:  mustConstant(t, 100),
					Source: newCycleSource(t, "http://sut.test/inbox", "Create", "Like", "Follow"), Transport: rt,
				}, record.RecorderOptions{
					CheckpointEvery: tc.every,
					Checkpoint: func(r *record.Result) {
						cps = append(cps, r)
						timelineAt = append(timelineAt, len(r.Timeline))
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				var at []int
				for _, cp := range cps {
					at = append(at, int(cp.Elapsed.Round(time.Second)/time.Second))
				}
				if !slices.Equal(at, tc.at) {
					t.Fatalf("checkpoints at %v s, want %v", at, tc.at)
				}
				for i, cp := range cps {
					k := at[i]
					if !cp.Partial || cp.Reason != record.ReasonCheckpoint || cp.Err != nil {
						t.Errorf("%d s: partial %v reason %q err %v", k, cp.Partial, cp.Reason, cp.Err)
					}
					if cp.Measured != time.Duration(k-1)*time.Second {
						t.Errorf("%d s: measured %v, want %v (after the 1 s warm-up)", k, cp.Measured, time.Duration(k-1)*time.Second)
					}
					if len(cp.Timeline) != k || timelineAt[i] != k {
						t.Errorf("%d s: %d ticks now, %d when taken; want %d", k, len(cp.Timeline), timelineAt[i], k)
					}
					if cp.WarmupCounts.Offered != 100 {
						t.Errorf("%d s: warm-up offered %d, want 100", k, cp.WarmupCounts.Offered)
					}
					checkConsistent(t, k, cp, 100*float64(k-1))
				}
				// The end of the run is the result, complete, not a checkpoint.
				c := res.Overall.Counts
				if res.Partial || c.Offered != 1100 || c.Completed != 1100 || c.Sent != 1100 {
					t.Errorf("final: partial %v counts %+v, want 1100 offered, sent and completed", res.Partial, c)
				}
			})
		})
	}
}

// checkConsistent checks the invariants of a mid-run snapshot taken k
// seconds in, when about offered measured sends were due.
func checkConsistent(t *testing.T, k int, r *record.Result, offered float64) {
	t.Helper()
	var sum record.Counts
	for typ, st := range r.Types {
		c := st.Counts
		sum.Merge(c)
		if c.Offered != c.Sent+c.Dropped {
			t.Errorf("%d s, %s: offered %d != sent %d + dropped %d", k, typ, c.Offered, c.Sent, c.Dropped)
		}
		if inflight := c.Sent - c.Completed - c.Aborted; inflight < 0 || inflight > 16 {
			t.Errorf("%d s, %s: sent %d, completed %d, aborted %d: %d in flight", k, typ, c.Sent, c.Completed, c.Aborted, inflight)
		}
		for name, h := range map[string]int64{"latency": st.Latency.TotalCount(), "service": st.Service.TotalCount(), "lateness": st.Lateness.TotalCount()} {
			if h != c.Completed {
				t.Errorf("%d s, %s: %s histogram holds %d values, %d completed", k, typ, name, h, c.Completed)
			}
		}
	}
	if sum != r.Overall.Counts {
		t.Errorf("%d s: types add up to %+v, overall %+v", k, sum, r.Overall.Counts)
	}
	if got := float64(r.Overall.Counts.Offered); got < offered-1 || got > offered+1 {
		t.Errorf("%d s: offered %v, want %v ± 1", k, got, offered)
	}
	if r.Dispatch.TotalCount() != r.Overall.Counts.Completed {
		t.Errorf("%d s: dispatch histogram %d, completed %d", k, r.Dispatch.TotalCount(), r.Overall.Counts.Completed)
	}
}

// killHelperEnv, when set to an out directory, makes
// TestKillHelperProcess run a flood that checkpoints there until it is
// killed.
const killHelperEnv = "CROWD_FLOOD_KILL_HELPER_OUT"

// TestKillHelperProcess is not a test: TestKillLeavesAReadablePartialRecord
// runs the test binary again with only this test and killHelperEnv set, and
// kills it with SIGKILL mid-run.
func TestKillHelperProcess(t *testing.T) {
	out := os.Getenv(killHelperEnv)
	if out == "" {
		t.Skip("helper process of TestKillLeavesAReadablePartialRecord")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	file := record.NewRecordFile(out)
	res, err := recordedWith(context.Background(), Plan{Limits: Limits{Duration: time.Minute, MaxInflight: 64},
		Pacer:  mustConstant(t, 200),
		Source: newCycleSource(t, srv.URL+"/inbox", "Create", "Follow"), Transport: NewTransport(64, 0, nil),
	}, record.RecorderOptions{
		CheckpointEvery: time.Second,
		Checkpoint: func(res *record.Result) {
			rec, err := res.Record(record.Settings{Label: "killed"})
			if err == nil {
				err = file.Checkpoint(rec)
			}
			if err != nil {
				t.Errorf("checkpoint: %v", err)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("the helper ran to its end (%v): it should have been killed", res.Elapsed)
}

// TestKillLeavesAReadablePartialRecord runs a flood in another process
// that checkpoints its record every second, reads the record over and over
// while checkpoints replace it (never a torn file), and kills the process
// with SIGKILL: what is left decodes, says partial and in progress, and
// counts the sends made until its last checkpoint.
func TestKillLeavesAReadablePartialRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a flood in a child process for a few seconds")
	}
	out := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), killHelperEnv+"="+out)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	childproc.Tie(cmd) // never outlives the test
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var killed atomic.Bool
	defer func() {
		if !killed.Load() {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()

	// Read the record as checkpoints replace it, until three have been seen.
	var reads, versions int
	var lastSent int64
	deadline := time.Now().Add(30 * time.Second)
	for versions < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d checkpoints in 30 s (%d reads)\n%s", versions, reads, output.String())
		}
		paths, _ := filepath.Glob(filepath.Join(out, "*.json"))
		if len(paths) > 1 {
			t.Fatalf("more than one record file: %v", paths)
		}
		if len(paths) == 1 {
			raw, err := os.ReadFile(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			var r record.Record
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatalf("read %d: a torn record: %v\n%s", reads, err, raw)
			}
			reads++
			if s := r.Overall.Counts.Sent; s > lastSent {
				lastSent = s
				versions++
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the helper was not killed by SIGKILL: %v\n%s", err, output.String())
	}
	paths, _ := filepath.Glob(filepath.Join(out, "*-killed.json"))
	if len(paths) != 1 {
		t.Fatalf("records left: %v", paths)
	}
	r, err := record.LoadRecord(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	c := r.Overall.Counts
	if !r.Partial || r.PartialReason != record.ReasonCheckpoint || c.Sent < lastSent || c.Offered != c.Sent+c.Dropped {
		t.Errorf("left: partial %v (%q), counts %+v; want partial, in progress, at least %d sent", r.Partial, r.PartialReason, c, lastSent)
	}
	if _, err := os.Stat(filepath.Join(out, "runs.md")); !os.IsNotExist(err) {
		t.Errorf("a killed run has no runs.md row: %v", err)
	}
	t.Logf("%d reads of %d+ checkpoints; left: %+v", reads, versions, c)
}
