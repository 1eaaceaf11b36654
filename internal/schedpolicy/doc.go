// Package schedpolicy reads and sets an OS thread's scheduling policy of
// sched(7), on Linux: the flood's dispatcher takes the deadline policy
// (the real-time FIFO one where it may not) and the pipeline's lowered
// signers the idle one, and each puts back what it found. Elsewhere it
// has nothing; its callers are Linux files.
package schedpolicy
