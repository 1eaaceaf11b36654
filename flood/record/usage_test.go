package record_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/crowdfed/crowd/flood/record"
)

// TestUsageError: the one usage-error type keeps what it wraps, so a
// caller still finds the cause, and says it in the wrapped error's words.
func TestUsageError(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		say   string // its message
		cause error  // errors.Is finds it (nil: none asked)
	}{
		// A flag's own message.
		{"formatted", record.Usagef("--out is empty"), "--out is empty", nil},
		// A file's error keeps its cause.
		{"wrapped", record.Usagef("--personas-file: %w", fs.ErrNotExist), "--personas-file: file does not exist", fs.ErrNotExist},
		// Usage of an error is that error's message.
		{"usage", record.Usage(fmt.Errorf("--count %d: want 1 or more", 0)), "--count 0: want 1 or more", nil},
	} {
		var ue *record.UsageError
		if !errors.As(c.err, &ue) || c.err.Error() != c.say || c.cause != nil && !errors.Is(c.err, c.cause) {
			t.Errorf("%s: %v, want a *UsageError saying %q", c.name, c.err, c.say)
		}
	}
	if record.Usage(nil) != nil {
		t.Error("Usage(nil) is not nil: a caller's err == nil check would fail")
	}
}
