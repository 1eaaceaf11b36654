package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/crowdfed/crowd/adminapi"
)

// defaultAdmin is where `crowd serve` listens for its admin API unless
// told otherwise (its own --admin default).
const defaultAdmin = "127.0.0.1:9180"

// adminFlags is the --admin flag of the commands that drive a running
// `crowd serve` (tail, send, lookup, flood).
type adminFlags struct {
	addr string
}

func (f *adminFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.addr, "admin", defaultAdmin, "host:port (or http://host:port) of the admin API of the running crowd serve")
}

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
	if u, err := url.Parse(base); err == nil && u.Host != "" && u.Port() == "" {
		return nil, usage(fmt.Errorf("--admin %q has no port (the default is %s)", f.addr, defaultAdmin))
	}
	c, err := adminapi.New(base, adminapi.Options{Name: raw + " (--admin)"})
	if err != nil {
		return nil, usage(fmt.Errorf("--admin %q is not host:port or http://host:port", f.addr))
	}
	return c, nil
}

// apiRefusal returns the admin API's own refusal (its JSON {"error": …},
// with the status saying which kind) that err is, if it is one.
func apiRefusal(err error) (*adminapi.Error, bool) {
	var ae *adminapi.Error
	return ae, errors.As(err, &ae) && ae.Reason != ""
}
