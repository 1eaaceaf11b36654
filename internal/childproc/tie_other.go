//go:build !linux

package childproc

import "os/exec"

// Tie changes nothing outside Linux, which has no parent-death signal: the
// child ends when its stdin closes, or its run does.
func Tie(cmd *exec.Cmd) {}
