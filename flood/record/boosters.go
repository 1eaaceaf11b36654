package record

// Boosters is what a flood with Announces did so that a real server keeps
// the boosts (SCHEMA.md, "boosters"): Mastodon keeps a boost of a post not
// its own only from an account a local one follows, so before the flood
// the personas with a client-API token followed the crowd's actors.
type Boosters struct {
	// Actors is how many crowd actors may boost.
	Actors int `json:"actors"`
	// Followed is how many of them a persona follows (its Follow accepted)
	// once the set-up ended.
	Followed int `json:"followed"`
	// Personas is how many personas followed them (those with a token).
	Personas int `json:"personas"`
}

// mergeBoosters adds two generators' set-ups: each shard's crowd is its own.
func mergeBoosters(a, b *Boosters) *Boosters {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		c := *b
		return &c
	case b == nil:
		c := *a
		return &c
	}
	return &Boosters{Actors: a.Actors + b.Actors, Followed: a.Followed + b.Followed, Personas: max(a.Personas, b.Personas)}
}
