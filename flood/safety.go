package flood

import "github.com/crowdfed/crowd/internal/dialguard"

// The flood's safety guard lives in internal/dialguard, shared with the
// manual sends (crowd send, /api/send) so both refuse the same targets;
// these names keep the flood's vocabulary.

// ErrPublicTarget is dialguard.ErrPublicTarget.
var ErrPublicTarget = dialguard.ErrPublicTarget

// GuardOptions is dialguard.GuardOptions.
type GuardOptions = dialguard.GuardOptions

// Guard is dialguard.Guard: resolve and check every host before sending.
type Guard = dialguard.Guard

// NewGuard returns a dialguard.Guard for o.
func NewGuard(o GuardOptions) *Guard { return dialguard.NewGuard(o) }
