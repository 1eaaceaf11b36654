package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// defaultAdmin is where `crowd serve` listens for its admin API unless
// told otherwise (its own --admin default).
const defaultAdmin = "127.0.0.1:9180"

// adminFlags is the --admin flag of the commands that drive a running
// `crowd serve` (tail, send, lookup).
type adminFlags struct {
	addr string
}

func (f *adminFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.addr, "admin", defaultAdmin, "host:port (or http://host:port) of the admin API of the running crowd serve")
}

// client checks --admin and returns a client for it; a value that is no
// address is a usage error naming the flag.
func (f *adminFlags) client() (*adminClient, error) {
	raw := strings.TrimSpace(f.addr)
	if raw == "" {
		return nil, usageError{errors.New("--admin is empty: give the host:port of `crowd serve --admin`")}
	}
	base := raw
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, usageError{fmt.Errorf("--admin %q is not host:port or http://host:port", f.addr)}
	}
	if u.Port() == "" {
		return nil, usageError{fmt.Errorf("--admin %q has no port (the default is %s)", f.addr, defaultAdmin)}
	}
	u.Path = ""
	return &adminClient{addr: raw, base: u.String(), http: &http.Client{Transport: &http.Transport{
		// Loopback or a compose network: an answer within seconds or none.
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		ResponseHeaderTimeout: 2 * time.Minute, // a send waits for the target's answer
		Proxy:                 nil,             // the admin API is never behind the user's proxy
	}}}, nil
}

// adminClient talks to the admin API of a running `crowd serve`. Its
// errors say what to do: noCrowdError when nothing answers, an adminError
// with the API's message when the API refused the request.
type adminClient struct {
	addr string // as the user gave it, for messages
	base string // http://host:port
	http *http.Client
}

// noCrowdError says that nothing answers at the --admin address, and
// what to do about it.
type noCrowdError struct {
	addr  string
	cause error
}

func (e noCrowdError) Error() string {
	return fmt.Sprintf("no crowd serve answers at %s (--admin): start one with `crowd serve` (%v)", e.addr, e.cause)
}

func (e noCrowdError) Unwrap() error { return e.cause }

// adminError is the admin API's own refusal (its JSON {"error": …}): the
// status says which kind (400 bad request, 404 unknown crowd actor, 502
// target unreachable).
type adminError struct {
	status int
	msg    string
}

func (e adminError) Error() string { return e.msg }

// unwrapURLError drops net/http's "Get \"url\":" prefix: the message
// already names the address.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		var op *net.OpError
		if errors.As(ue.Err, &op) && op.Err != nil {
			return op.Err
		}
		return ue.Err
	}
	return err
}

// do sends req and returns the response when it is 2xx. A refused or
// failed connection is a noCrowdError, unless ctx ended (then ctx's error);
// a non-2xx answer is an adminError carrying the API's {"error": …}, or
// a plain error when whatever answered is not the admin API.
func (c *adminClient) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, noCrowdError{addr: c.addr, cause: unwrapURLError(err)}
		}
		return nil, fmt.Errorf("the crowd at %s (--admin): %w", c.addr, unwrapURLError(err))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != "" {
		return nil, adminError{status: resp.StatusCode, msg: e.Error}
	}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
		// Something answers, but not the inbox's admin API: another program,
		// or a crowd too old to have it.
		return nil, fmt.Errorf("%s at %s answered HTTP %d: is that a `crowd serve` admin API (--admin)?",
			req.URL.Path, c.addr, resp.StatusCode)
	}
	return nil, fmt.Errorf("%s at %s answered HTTP %d: %s", req.URL.Path, c.addr, resp.StatusCode, strings.TrimSpace(string(b)))
}

// get GETs path with query and decodes the JSON answer into v.
func (c *adminClient) get(ctx context.Context, path string, query url.Values, v any) error {
	resp, err := c.open(ctx, path, query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("the crowd at %s (--admin): GET %s: the answer is not what the admin API sends: %w", c.addr, path, err)
	}
	return nil
}

// open GETs path with query and returns the (2xx) response for the
// caller to read and close: the live stream.
func (c *adminClient) open(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return c.do(ctx, req)
}

// post POSTs body as JSON to path and decodes the JSON answer into v.
func (c *adminClient) post(ctx context.Context, path string, body, v any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.do(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("the crowd at %s (--admin): POST %s: the answer is not what the admin API sends: %w", c.addr, path, err)
	}
	return nil
}

// indentedJSONText indents a JSON document for people; what is not JSON is
// returned as it is.
func indentedJSONText(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// printIndentedJSON writes v indented, HTML left readable (--json outputs).
func printIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
