//go:build !linux

package main

// processCPUOf reads no other process's CPU outside Linux: zero.
func processCPUOf(pid int) cpuTimes { return cpuTimes{} }

// processFaultsOf reads no other process's faults outside Linux: zero.
func processFaultsOf(pid int) float64 { return 0 }

// processSwitchesOf reads no other process's switches outside Linux: zero.
func processSwitchesOf(pid int) float64 { return 0 }

// machineIdle reads no idle time outside Linux: zero.
func machineIdle() float64 { return 0 }
