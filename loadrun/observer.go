package loadrun

import (
	"context"
	"net/http"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// Observer watches a run at one rate from outside the engine (the
// audience of `crowd run`). The run calls Setup once, then Start and
// Finish around the flood; Finish is called whenever Start succeeded.
type Observer interface {
	// Setup runs once the environment is up and before the targets are
	// looked up (the personas' set-up happens there).
	Setup(ctx context.Context, s Setup) error
	// Start runs just before the first send. It returns the transport the
	// flood sends through: tr, or tr wrapped to see each send.
	Start(ctx context.Context, tr http.RoundTripper) (http.RoundTripper, error)
	// Finish runs after the flood's last answer with its record (nil when
	// the flood made none) and the record's path (its observer's files go
	// beside it); it may wait (a drain) and returns what to add.
	Finish(ctx context.Context, rec *record.Record, path string) (Addition, error)
}

// Setup is what an observer may use to set itself up.
type Setup struct {
	Env       *Environment
	Guard     *flood.Guard // refuses public targets as the flood does
	Client    *http.Client // guarded, trusting the crowd's CA
	UserAgent string
}

// Addition is what an observer adds to a run's record.
type Addition struct {
	// Doc is the record as written, carrying the flood's record and the
	// observer's sections; nil writes the flood's record alone.
	Doc any
	// Written, when set, runs once the record is written at path (rows of
	// the observer's own table, its summary).
	Written func(path string) error
	// Judge, when set, judges the gates on what the observer measured
	// (crowd run's run section: visibility.p95<5s); nil judges none, and
	// such a gate is missed for want of data.
	Judge func(gates []record.Gate) []record.GateResult
}
