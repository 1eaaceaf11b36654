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

// personaPostsFlags are crowd flood's flags for posting as the personas
// that have no post (crowd run's set-up posts --posts itself).
type personaPostsFlags struct {
	tokens []string
	api    string
}

// register adds the flags to cmd.
func (f *personaPostsFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.tokens, "post-token", nil, "NAME=TOKEN: a persona with no post posts one through the SUT's Mastodon client API with this bearer token before the flood, so it gets Likes (repeatable)")
	fl.StringVar(&f.api, "post-api", "", "the SUT's client API for --post-token (default https://<the persona's host>)")
}

// config is the flags as a load run's PersonaPostsConfig.
func (f *personaPostsFlags) config() loadrun.PersonaPostsConfig {
	return loadrun.PersonaPostsConfig{Tokens: f.tokens, ClientAPI: f.api}
}
