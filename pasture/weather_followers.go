package pasture

import (
	"net/url"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture/weather"
)

// resolveWeather turns a spec's @followers rules into the origins they
// name, ranked from the crowd's follow graph as it stands now.
func (p *Pasture) resolveWeather(spec weather.Spec) (weather.Spec, error) {
	if !spec.NeedsRanking() {
		return spec, nil
	}
	return weather.Resolve(spec, weather.RankByFollowers(followersByOrigin(p.cfg.World)))
}

// followersByOrigin counts, per origin the world serves, its actors that
// follow an account outside the crowd (the SUT's) and were accepted: those
// are the inboxes the SUT delivers its posts to.
func followersByOrigin(w *actors.World) map[string]int {
	out := map[string]int{}
	for _, local := range w.Graph.Locals() {
		u, err := url.Parse(local)
		if err != nil {
			continue
		}
		if _, served := w.Origin(u.Hostname()); !served {
			continue
		}
		for _, rel := range w.Graph.Following(local) {
			if _, ours := w.ActorByID(rel.Remote); rel.State == actors.StateAccepted && !ours {
				out[u.Hostname()]++
				break
			}
		}
	}
	return out
}
