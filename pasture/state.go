package pasture

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/apclient"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/internal/statedir"
)

// PruneState forgets the Follows of the crowd whose state is dir that are
// still pending after olderThan (lists them only with dryRun), on a
// stopped crowd: the graph is written here, so the state directory is
// taken as a running crowd would take it (an error wrapping
// statedir.ErrNotDir, or naming the running owner). A running crowd is
// pruned through its admin API instead.
func PruneState(dir string, olderThan time.Duration, dryRun bool) (adminapi.PruneResult, error) {
	var res adminapi.PruneResult
	lock, err := statedir.AcquireExisting(dir)
	if errors.Is(err, statedir.ErrNotDir) {
		return res, err
	}
	if err != nil {
		return res, fmt.Errorf("%w: that crowd is running: prune it through its admin API, leaving out --state and giving --admin the address it serves its admin API on (crowd follows prune --admin HOST:PORT; 127.0.0.1:9180 unless its --admin said otherwise), or stop it first", err)
	}
	defer lock.Release()
	g, err := actors.OpenGraph(dir, nil)
	if err != nil {
		return res, fmt.Errorf("--state %s: %w", dir, err)
	}
	defer g.Close()
	stale, removed, err := g.PrunePending(time.Now().Add(-olderThan), dryRun)
	if err != nil {
		return res, err
	}
	return adminapi.PruneResult{Stale: inbox.WireRelations(stale), Removed: removed}, nil
}

// CheckActorRef accepts what the admin API's send resolves: an http(s)
// actor URL, or an account (acct:name@host, name@host, @name@host).
func CheckActorRef(s string) error {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "://") {
		if !apclient.IsHTTPURL(s) {
			return errors.New("not an http(s) actor URL")
		}
		return nil
	}
	if _, _, err := apclient.ParseAcct(s); err != nil {
		return errors.New("neither name@host nor an actor URL")
	}
	return nil
}
