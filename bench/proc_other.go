//go:build !linux

package main

import "syscall"

// childAttr has no parent-death signal outside Linux: helpers end when
// their stdin closes or their run does.
func childAttr() *syscall.SysProcAttr { return nil }

// processCPUOf reads no other process's CPU outside Linux: zero.
func processCPUOf(pid int) cpuTimes { return cpuTimes{} }

// processFaultsOf reads no other process's faults outside Linux: zero.
func processFaultsOf(pid int) float64 { return 0 }

// processSwitchesOf reads no other process's switches outside Linux: zero.
func processSwitchesOf(pid int) float64 { return 0 }

// machineIdle reads no idle time outside Linux: zero.
func machineIdle() float64 { return 0 }
