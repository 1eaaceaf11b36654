// Package childproc ties a child process's life to its parent's where the
// kernel can, so that a helper a test or the bench starts (a sink, a flood,
// a peer, a process it kills on purpose) never outlives the process that
// started it when that one is killed.
package childproc
