package audience

import (
	"context"
	"sync"
	"time"
)

// SweepOptions bound a Sweep.
type SweepOptions struct {
	// Pages is how many pages of the home timeline are read per persona at
	// most; 0 = 25.
	Pages int
	// Limit is the page size; 0 = 40 (Mastodon's largest).
	Limit int
	// Now stamps the finds; nil = time.Now.
	Now func() time.Time
	// Concurrency is how many homes are read at once; 0 = 4.
	Concurrency int
}

// SweepStats say what a Sweep did.
type SweepStats struct {
	Personas int    `json:"personas"` // personas whose homes were read
	Pages    int    `json:"pages"`    // pages read in all
	Found    int    `json:"found"`    // notes found below the newest page (Visibility.Buried)
	Errors   int    `json:"errors"`   // pages that failed (the persona's sweep stops there)
	Error    string `json:"first_error,omitempty"`
	Left     int    `json:"left,omitempty"` // personas with unseen notes not read: ctx ended first
	Cut      int    `json:"cut,omitempty"`  // personas whose reading ctx's end cut short
}

// Sweep reads deeper into the home timeline of every persona that still
// has notes no probe saw, page after page (max_id), and marks the ones it
// finds as buried: a SUT that processes a note late files it by its
// publication time, below newer ones, where the probes' newest page never
// shows it. A persona's sweep stops when its notes are all found, a page
// is empty or repeats (a server that ignores max_id), o.Pages pages were
// read, a page fails, or ctx ends. tokens maps a persona's name to its
// token.
func Sweep(ctx context.Context, c *Client, tokens map[string]string, v *Visibility, o SweepOptions) SweepStats {
	if o.Pages <= 0 {
		o.Pages = 25
	}
	if o.Limit <= 0 {
		o.Limit = 40
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	var (
		mu sync.Mutex
		st SweepStats
		wg sync.WaitGroup
	)
	slots := make(chan struct{}, o.Concurrency)
	for persona, unseen := range v.Unseen() {
		token, ok := tokens[persona]
		if !ok || unseen == 0 {
			continue
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			st.Left++ // only this goroutine writes Left
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			one := sweepHome(ctx, c, persona, token, unseen, v, o)
			mu.Lock()
			defer mu.Unlock()
			st.Personas++
			st.Pages += one.Pages
			st.Found += one.Found
			st.Errors += one.Errors
			st.Cut += one.Cut
			if st.Error == "" {
				st.Error = one.Error
			}
		}()
	}
	wg.Wait()
	return st
}

// sweepHome pages down one persona's home (see Sweep).
func sweepHome(ctx context.Context, c *Client, persona, token string, unseen int, v *Visibility, o SweepOptions) SweepStats {
	var st SweepStats
	maxID := ""
	for page := 0; page < o.Pages && ctx.Err() == nil && unseen > 0; page++ {
		statuses, _, err := c.HomeTimelinePage(ctx, token, o.Limit, maxID)
		st.Pages++
		if err != nil {
			if ctx.Err() != nil {
				st.Cut++ // the sweep's bound, not the SUT
				break
			}
			st.Errors++
			st.Error = err.Error()
			break
		}
		now := o.Now()
		for _, s := range statuses {
			if v.Buried(persona, s.URI, now) {
				st.Found++
				unseen--
			}
		}
		if len(statuses) == 0 || statuses[len(statuses)-1].ID == "" || statuses[len(statuses)-1].ID == maxID {
			break
		}
		maxID = statuses[len(statuses)-1].ID
	}
	return st
}
