package adminapi_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/pasture"
)

// TestClientSendsTheToken: a Client sends Options.Token to an admin API
// off loopback (a pasture whose --admin is a name, served on a loopback
// listener); a 401 wraps ErrUnauthorized and says, with a TokenHint, how
// to give the token, telling a missing token from a wrong one.
func TestClientSendsTheToken(t *testing.T) {
	const token = "client-test-token-0123456789"
	world, err := actors.Open(actors.Config{Origins: 1, Actors: 1, Domain: "flood%d.test", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { world.Close() })
	p, err := pasture.New(pasture.Config{World: world, AdminAddr: "crowd.internal:9180", AdminToken: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.AdminHandler())
	t.Cleanup(srv.Close)
	for _, c := range []struct {
		name string
		opts adminapi.Options
		want string // "" for success, else in the error's message
	}{
		// The token: the call goes through.
		{"token", adminapi.Options{Token: token}, ""},
		// No token, with a hint: the message is the hint's, and says none was sent.
		{"none", adminapi.Options{TokenHint: "pass --admin-token"}, "wants its token (401 on /api/weather): pass --admin-token"},
		// A wrong token, with a hint: the message says the one sent was refused.
		{"wrong", adminapi.Options{Token: token + "x", TokenHint: "pass --admin-token"}, "refused the token given"},
		// No hint: the API's own reason.
		{"no hint", adminapi.Options{}, "Authorization: Bearer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := adminapi.New(srv.URL, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Weather(context.Background())
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, adminapi.ErrUnauthorized) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want ErrUnauthorized saying %q", err, c.want)
			}
		})
	}
	// The open routes need no token.
	cl, _ := adminapi.New(srv.URL, adminapi.Options{})
	if _, err := cl.CA(context.Background()); err != nil {
		t.Errorf("the CA without a token: %v", err)
	}
}
