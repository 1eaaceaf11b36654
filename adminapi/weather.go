package adminapi

import (
	"context"
	"time"
)

// The weather routes: the bad weather the crowd's origins are in (down,
// slow, flaky…, see `crowd serve --weather`), read and changed while the
// crowd runs. Each answers the WeatherInfo in force after the call.
const (
	// RouteWeather answers the WeatherInfo in force.
	RouteWeather Route = "GET /api/weather"

	// RouteWeatherSet puts a WeatherRequest's spec in force at once, in
	// place of the one before. A spec that cannot be read, names an origin
	// the crowd does not serve or asks for more origins than it has is 400
	// with the reason, and the weather stays as it was.
	RouteWeatherSet Route = "PUT /api/weather"

	// RouteWeatherClear clears the weather: every origin answers as a
	// healthy server again.
	RouteWeatherClear Route = "DELETE /api/weather"
)

// WeatherRequest is RouteWeatherSet's body, which refuses a field it lacks
// (DecodeStrictBody): a field added here is omitempty.
type WeatherRequest struct {
	// Spec is the weather, as `crowd serve --weather` takes it
	// ("down=5%,slow=flood2.test:30s"); "" or "clear" clears it.
	Spec string `json:"spec"`
}

// WeatherInfo is the weather in force.
type WeatherInfo struct {
	// Spec is the spec in force, written out with every parameter
	// ("slow=5%:30s:0.5"); "" when the weather is clear.
	Spec string `json:"spec"`
	// Since is when it was put in force (at the crowd's start, or by the
	// last set or clear).
	Since time.Time `json:"since"`
	// Changes counts the changes of the weather in force since the crowd
	// started (the same weather put in force again is none): a reader
	// that saw 3 and then 5 knows of a change made between its readings,
	// even one undone since. An older crowd leaves it out (0).
	Changes uint64 `json:"changes"`
	// Now is the crowd's clock as it answered: a reader on another
	// machine dates Since by how long before Now it was, not by its own
	// clock, which may be set otherwise.
	Now time.Time `json:"now"`
	// Served is how many origins the crowd serves (its shard's): those
	// Origins does not list are clear.
	Served int `json:"served"`
	// Counts is how many origins are in each kind of condition ("down",
	// "slow"…, and "clear"); a kind with none is left out.
	Counts map[string]int `json:"counts"`
	// Origins are the origins in a condition other than clear, by host.
	Origins []WeatherOrigin `json:"origins"`
	// Answered is, for each origin that has had weather since the crowd
	// started (whatever its weather now, clear included), what the weather
	// answered in its stead, by host: a run tells by it whether the SUT
	// keeps knocking at an origin that is gone or lapsed. Empty until an
	// origin has had weather.
	Answered map[string]WeatherAnswered `json:"answered"`
}

// WeatherAnswered counts what the weather answered for one origin since
// the crowd started. Each counts attempts as the crowd saw them, not as
// the SUT made them: one delivery of the SUT's can meet a reset, then a
// retried connect, and a resolver asks for A and AAAA.
type WeatherAnswered struct {
	// Deliveries are POSTs to its inboxes the weather answered, held or
	// reset (any condition, a slow origin's wait included).
	Deliveries int64 `json:"deliveries"`
	// Documents are its other requests (actors, keys, WebFinger…) the
	// weather answered, held or reset: a gone origin's 410s.
	Documents int64 `json:"documents"`
	// Connections are TCP connections to its own address the down
	// listener reset, before any byte was read.
	Connections int64 `json:"connections"`
	// Handshakes are TLS handshakes for its name refused (down) or served
	// a broken certificate (tls-expired, tls-wrong-name).
	Handshakes int64 `json:"handshakes"`
	// Lookups are DNS queries for its name, or a name under it, answered
	// NXDOMAIN (nxdomain).
	Lookups int64 `json:"lookups"`
}

// WeatherOrigin is one origin in bad weather.
type WeatherOrigin struct {
	Host string `json:"host"`
	// Kind is the condition's name ("slow"); Condition is it with its
	// parameters, as a spec writes them ("slow:30s:0.5").
	Kind      string `json:"kind"`
	Condition string `json:"condition"`
}

// Weather calls RouteWeather.
func (c *Client) Weather(ctx context.Context) (WeatherInfo, error) {
	var w WeatherInfo
	return w, c.call(ctx, RouteWeather, nil, nil, &w)
}

// SetWeather calls RouteWeatherSet with spec.
func (c *Client) SetWeather(ctx context.Context, spec string) (WeatherInfo, error) {
	var w WeatherInfo
	return w, c.call(ctx, RouteWeatherSet, nil, WeatherRequest{Spec: spec}, &w)
}

// ClearWeather calls RouteWeatherClear.
func (c *Client) ClearWeather(ctx context.Context) (WeatherInfo, error) {
	var w WeatherInfo
	return w, c.call(ctx, RouteWeatherClear, nil, nil, &w)
}
