package childproc

import (
	"os/exec"
	"syscall"
)

// Tie has cmd's process sent SIGKILL when the thread that starts it exits
// (Linux's parent-death signal), which it does when the process that
// started it dies, however it dies; the rest of cmd.SysProcAttr is kept.
// Call it before cmd.Start, and start the child from no goroutine locked
// to its thread (runtime.LockOSThread) that may end locked: Go ends that
// thread then, and so the child, while the process lives on.
func Tie(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
