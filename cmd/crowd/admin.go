package main

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/pasture"
)

// defaultAdmin is where `crowd serve` listens for its admin API unless
// told otherwise (its own --admin default).
const defaultAdmin = "127.0.0.1:9180"

// adminFlags are the --admin and --admin-token flags of the commands that
// drive a running `crowd serve` (tail, send, lookup, flood), and the
// --state the token file is read from.
type adminFlags struct {
	addr, token string
	state       *pflag.Flag
}

// register adds the flags to cmd; a command with a --state of its own
// registers it first, and the token file is read from it.
func (f *adminFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "admin", defaultAdmin, "host:port (or http://host:port) of the admin API of the running crowd serve")
	fl.StringVar(&f.token, "admin-token", "", "the admin API's token, which it requires when it listens off loopback (default: the "+pasture.AdminTokenFile+" file in --state, when readable)")
	if fl.Lookup("state") == nil {
		fl.String("state", actors.DefaultConfig().StateDir, "the running crowd's --state, whose "+pasture.AdminTokenFile+" file is the admin token unless --admin-token is given")
	}
	f.state = fl.Lookup("state")
}

// adminToken is --admin-token (or CROWD_ADMIN_TOKEN), else the token file
// of --state when this machine can read it, else "": an admin API on
// loopback needs none, and one off loopback says so (tokenHint).
func (f *adminFlags) adminToken() string {
	if t := strings.TrimSpace(f.token); t != "" {
		return t
	}
	dir := actors.DefaultConfig().StateDir
	if f.state != nil && f.state.Value.String() != "" {
		dir = f.state.Value.String()
	}
	t, err := pasture.ReadAdminToken(dir)
	if err != nil {
		return ""
	}
	return t
}

// tokenHint is what a 401 of the admin API tells the user to do.
const tokenHint = "pass --admin-token TOKEN or set CROWD_ADMIN_TOKEN, TOKEN being that crowd's " +
	"(its CROWD_ADMIN_TOKEN, or the " + pasture.AdminTokenFile + " file in its --state, which is read here when --state names it on this machine)"

// client checks --admin and returns the admin API's client for it, whose
// messages name the flag; a value that is no address is a usage error
// naming the flag.
func (f *adminFlags) client() (*adminapi.Client, error) {
	raw := strings.TrimSpace(f.addr)
	if raw == "" {
		return nil, usage(errors.New("--admin is empty: give the host:port of `crowd serve --admin`"))
	}
	base := raw
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if u, err := url.Parse(base); err == nil && u.Scheme != "http" && u.Scheme != "https" {
		return nil, usage(fmt.Errorf("--admin %q: the admin API speaks http or https, not %s: give host:port or http://host:port", f.addr, u.Scheme))
	} else if err == nil && u.Host != "" && u.Port() == "" {
		if _, err := strconv.ParseUint(raw, 10, 16); err == nil {
			return nil, usage(fmt.Errorf("--admin %q is a port alone: give host:port, e.g. 127.0.0.1:%s", f.addr, raw))
		}
		return nil, usage(fmt.Errorf("--admin %q has no port (the default is %s)", f.addr, defaultAdmin))
	}
	c, err := adminapi.New(base, adminapi.Options{Name: raw + " (--admin)", Token: f.adminToken(), TokenHint: tokenHint})
	if err != nil {
		return nil, usage(fmt.Errorf("--admin %q is not host:port or http://host:port", f.addr))
	}
	return c, nil
}

// apiRefusal returns the admin API's own refusal (its JSON {"error": …},
// with the status saying which kind) that err is, if it is one. A 401 is
// not one: the request was not looked at, and its error says how to pass
// the token.
func apiRefusal(err error) (*adminapi.Error, bool) {
	var ae *adminapi.Error
	return ae, errors.As(err, &ae) && ae.Reason != "" && !errors.Is(err, adminapi.ErrUnauthorized)
}

// checkAdminToken refuses a token given to a crowd that serves the admin
// API (--admin-token, CROWD_ADMIN_TOKEN) that pasture would not take.
func checkAdminToken(token string) error {
	if err := pasture.CheckAdminToken(token); err != nil {
		return fmt.Errorf("--admin-token (or CROWD_ADMIN_TOKEN): %w", err)
	}
	return nil
}
