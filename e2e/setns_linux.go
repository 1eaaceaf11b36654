package e2e

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// setnsSyscall is the setns(2) number; package syscall lacks SYS_SETNS on amd64.
func setnsSyscall() (uintptr, bool) {
	switch runtime.GOARCH {
	case "amd64":
		return 308, true
	case "arm64", "riscv64", "loong64":
		return 268, true
	}
	return 0, false
}

// setns moves the calling thread into the network namespace open as f.
func setns(f *os.File) error {
	nr, ok := setnsSyscall()
	if !ok {
		return fmt.Errorf("setns: unsupported GOARCH %s", runtime.GOARCH)
	}
	if _, _, errno := syscall.RawSyscall(nr, f.Fd(), syscall.CLONE_NEWNET, 0); errno != 0 {
		return fmt.Errorf("setns: %w", errno)
	}
	return nil
}
