package childproc

import (
	"errors"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTiedChildDiesWithItsStarter: a tied child is killed (SIGKILL) once
// the thread that started it exits, as it does when its parent dies; one
// not tied runs on.
func TestTiedChildDiesWithItsStarter(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep(1) to start")
	}
	for _, c := range []struct {
		name   string
		tie    bool
		killed bool
	}{
		// Tied: killed as its starter's thread exits.
		{"tied", true, true},
		// Not tied: still running a while after.
		{"not tied", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(sleep, "30")
			if c.tie {
				Tie(cmd)
			}
			if err := onThreadThatExits(cmd.Start); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				var exit *exec.ExitError
				killed := errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL
				if !c.killed || !killed {
					t.Errorf("the child ended (%v); want it killed: %v", err, c.killed)
				}
			case <-time.After(2 * time.Second):
				cmd.Process.Kill()
				<-waited
				if c.killed {
					t.Error("the child still ran 2 s after the thread that started it exited")
				}
			}
		})
	}
}

// onThreadThatExits runs fn on a thread that exits when fn returns: a
// goroutine's, locked to it and ending locked, which Go then ends, on
// any thread but the process's first, which Go never ends. A goroutine
// that lands on that one holds it, so that the next lands elsewhere.
func onThreadThatExits(fn func() error) error {
	var held []chan struct{}
	defer func() {
		for _, h := range held {
			close(h)
		}
	}()
	for {
		ran, hold := make(chan error, 1), make(chan struct{})
		first := make(chan bool, 1)
		go func() {
			runtime.LockOSThread()
			if unix.Gettid() == unix.Getpid() {
				first <- true
				<-hold
				runtime.UnlockOSThread()
				return
			}
			first <- false
			ran <- fn() // never unlocked: the thread exits with the goroutine
		}()
		if !<-first {
			return <-ran
		}
		held = append(held, hold)
	}
}
