//go:build !linux

package main

// measureKernelCosts measures nothing outside Linux: zero.
func measureKernelCosts(pages, calls, trips int) kernelCosts { return kernelCosts{} }
