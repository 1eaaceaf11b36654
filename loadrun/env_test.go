package loadrun

import (
	"bytes"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestQuietLoggerKeepsWarnings: the in-process crowd's logger shows
// warnings and up whatever --log-level says, and never makes zap complain
// about the level (it did under --log-level error).
func TestQuietLoggerKeepsWarnings(t *testing.T) {
	for _, c := range []struct {
		level    zapcore.Level
		warnings bool
	}{
		{zapcore.DebugLevel, true},  // raised to warn
		{zapcore.InfoLevel, true},   // raised to warn
		{zapcore.WarnLevel, true},   // already there
		{zapcore.ErrorLevel, false}, // less than warn asked: kept as asked
	} {
		var complaints bytes.Buffer
		core, logs := observer.New(c.level)
		quiet := quietLogger(zap.New(core, zap.ErrorOutput(zapcore.AddSync(&complaints))))
		quiet.Info("info")
		quiet.Warn("warn")
		if complaints.Len() > 0 {
			t.Errorf("%v: zap complained: %s", c.level, complaints.String())
		}
		if n := logs.FilterMessage("info").Len(); n != 0 {
			t.Errorf("%v: an info line got through", c.level)
		}
		if n := logs.FilterMessage("warn").Len(); (n == 1) != c.warnings {
			t.Errorf("%v: %d warnings, want shown=%v", c.level, n, c.warnings)
		}
	}
}
