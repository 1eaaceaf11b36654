package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/loadrun"
)

// fetchbackFlags are the flags of what the SUT fetches back (crowd flood,
// crowd run).
type fetchbackFlags struct {
	on    bool
	grace time.Duration
}

// register adds the fetch-back flags to cmd.
func (f *fetchbackFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&f.on, "fetchback", true, "count what the SUT fetches back from the crowd's origins during the run (WebFinger, actors, objects, collections, media, NodeInfo) in the record's fetchback section")
	fl.DurationVar(&f.grace, "fetchback-grace", 3*time.Second, "how long after the run's last answer the SUT's fetches are still counted (as after_end)")
}

// config is the flags as a load run's FetchbackConfig.
func (f *fetchbackFlags) config() loadrun.FetchbackConfig {
	return loadrun.FetchbackConfig{Off: !f.on, Grace: f.grace}
}
