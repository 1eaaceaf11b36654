package loadrun

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/flood"
	"github.com/crowdfed/crowd/flood/record"
)

// TestAudienceSetupRefuses: what the audience's set-up refuses before it
// asks the SUT anything of its personas, and whether the mistake is the
// user's (a usage error, exit 2) or the SUT's (exit 1).
func TestAudienceSetupRefuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sutHost string // the personas' host
		api     string
		public  bool   // --allow-public-target
		want    string // the error names this
		usage   bool   // a usage error
	}{
		// A client API at a public address is a flood of someone else's server.
		{"public client api", "sut.test", "https://93.184.216.34", false, "--client-api https://93.184.216.34", true},
		// The default client API, the personas' host: named as that, not as a flag never given.
		{"public default client api", "93.184.216.34", "", false, "the SUT's client API https://93.184.216.34 (the personas' host; --client-api to give another)", true},
		// A client API where nothing answers (port 1 of loopback): the SUT's
		// failure, not the user's.
		{"nothing answers", "sut.test", "http://127.0.0.1:1", false, "connect", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := AudienceConfig{Count: 1, SUTHost: tc.sutHost, ClientAPI: tc.api, Tokens: []string{"load0=t"},
				ProbeHz: 1, SetupTimeout: time.Second}
			p, errs := a.plan()
			if len(errs) == 0 {
				errs = p.resolveTokens(a)
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			obs := newAudience(p, Config{AllowPublic: tc.public}, zap.NewNop())
			guard := flood.NewGuard(flood.GuardOptions{AllowPublic: tc.public})
			err := obs.Setup(context.Background(), Setup{Guard: guard, Client: &http.Client{Timeout: 5 * time.Second}, UserAgent: "crowd/test"})
			var ue *record.UsageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || errors.As(err, &ue) != tc.usage {
				t.Fatalf("Setup: %v, want an error naming %q (usage error: %v)", err, tc.want, tc.usage)
			}
		})
	}
}

// TestAudienceWithoutAdminAPI: with no admin API of the crowd, no crowd
// actor can follow the personas: the set-up goes on without deliveries
// rather than fail.
func TestAudienceWithoutAdminAPI(t *testing.T) {
	a := AudienceConfig{Count: 1, SUTHost: "sut.test", Tokens: []string{"load0=t"}, Followers: 2, ProbeHz: 1, SetupTimeout: time.Second}
	p, errs := a.plan()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	obs := newAudience(p, Config{}, zap.NewNop())
	obs.env = &Environment{}
	if err := obs.followPersonas(context.Background(), context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(obs.followers) != 0 || obs.stats.CrowdFollowsRequested != 0 {
		t.Errorf("followers %v, %d requested: want none", obs.followers, obs.stats.CrowdFollowsRequested)
	}
}
