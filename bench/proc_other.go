//go:build !linux

package main

import "syscall"

// childAttr has no parent-death signal outside Linux: helpers end when
// their stdin closes or their run does.
func childAttr() *syscall.SysProcAttr { return nil }
