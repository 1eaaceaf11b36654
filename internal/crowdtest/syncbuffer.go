package crowdtest

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that a command's or a process's goroutines
// may write while a test reads it: tests that run commands side by side
// hand each its own, instead of the process's standard streams.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
