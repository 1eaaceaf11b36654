package main

import "syscall"

// childAttr makes a helper process die with the bench (SIGKILL when the
// bench's thread that started it exits), so an interrupted bench leaves
// no sink, flood or `crowd serve` behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
