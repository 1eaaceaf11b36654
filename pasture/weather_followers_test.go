package pasture

import (
	"errors"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture/weather"
)

// TestWeatherAtFollowers: @followers is the origin with most actors whose
// Follow of a SUT account was accepted; a pending Follow, a Follow of a
// crowd actor and a second account followed by the same actor do not
// count. The forecast's spec names the origin it took.
func TestWeatherAtFollowers(t *testing.T) {
	p := testPasture(t, Config{Version: "test"})
	g := p.cfg.World.Graph
	follow := func(local, remote, state string) {
		t.Helper()
		id := local + "/follows/" + remote
		if err := g.AddFollowing(local, remote, id); err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.SetFollowingState(id, state); err != nil {
			t.Fatal(err)
		}
	}
	spec, err := weather.ParseSpec("down=@followers")
	if err != nil {
		t.Fatal(err)
	}
	// No follower yet: nothing to take, and the weather stays clear.
	if err := p.SetWeather(spec); !errors.Is(err, weather.ErrNoFollowers) || p.Sky().Now() != nil {
		t.Fatalf("SetWeather with no followers = %v (forecast %v), want ErrNoFollowers and clear weather", err, p.Sky().Now())
	}
	const sut = "https://sut.test/users/load"
	follow("https://flood1.test/users/alice", sut+"0", actors.StateAccepted)
	follow("https://flood1.test/users/alice", sut+"1", actors.StateAccepted) // the same actor again
	follow("https://flood1.test/users/bob", sut+"0", actors.StatePending)    // not a follower yet
	follow("https://flood1.test/users/bob", "https://flood2.test/users/alice", actors.StateAccepted)
	follow("https://flood2.test/users/alice", sut+"0", actors.StateAccepted)
	follow("https://flood2.test/users/bob", sut+"2", actors.StateAccepted)
	if err := p.SetWeather(spec); err != nil {
		t.Fatal(err)
	}
	if c := p.Sky().Condition("flood2.test"); c.Kind != weather.Down {
		t.Errorf("flood2.test (two followers) is %v, want down", c)
	}
	if c := p.Sky().Condition("flood1.test"); c.Kind != weather.Clear {
		t.Errorf("flood1.test (one follower) is %v, want clear", c)
	}
	if got := p.Sky().Now().Spec().String(); got != "down=flood2.test" {
		t.Errorf("the forecast's spec is %q, want the origin it took", got)
	}
	// Both origins by rank, and no third.
	two, _ := weather.ParseSpec("slow=@followers:2")
	if err := p.SetWeather(two); err != nil || p.Sky().Now().Spec().String() != "slow=flood2.test+flood1.test:30s:0.5" {
		t.Errorf("@followers:2 = %v, %v", p.Sky().Now().Spec(), err)
	}
	three, _ := weather.ParseSpec("slow=@followers:3")
	if err := p.SetWeather(three); !errors.Is(err, weather.ErrSpec) {
		t.Errorf("@followers:3 of two origins = %v, want ErrSpec", err)
	}
}
