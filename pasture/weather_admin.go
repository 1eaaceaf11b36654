package pasture

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/pasture/weather"
)

// weatherClock remembers when the weather in force was put in force; its
// lock makes the forecast and that time change together.
type weatherClock struct {
	mu    sync.Mutex
	since time.Time
	// changes counts the changes since the crowd started: a reader that
	// saw 3 and then 5 knows of a change it did not see.
	changes uint64
	// changing makes an admin change and its answer one step, so two
	// concurrent PUTs are each answered with their own weather.
	changing sync.Mutex
}

// putWeather puts f in force (nil clears) and notes when, unless f is the
// weather in force already: then it stays in force since it was put there
// (a run dates another hand's change by it), the held connections are
// not woken, and putWeather reports false.
func (p *Pasture) putWeather(f *weather.Forecast) bool {
	p.wx.mu.Lock()
	defer p.wx.mu.Unlock()
	if p.sky.Now().Same(f) {
		return false
	}
	p.sky.Set(f)
	p.wx.since = time.Now()
	p.wx.changes++
	return true
}

// OriginWeather is the condition the weather in force puts origin host in
// ("down", "slow:30s:0.5"), "" when clear.
func (p *Pasture) OriginWeather(host string) string {
	if c := p.sky.Now().Condition(host); c.Kind != weather.Clear {
		return c.String()
	}
	return ""
}

// WeatherInfo describes the weather in force: its spec, since when, and
// every origin it puts in a condition, with the counts per kind; and what
// the weather answered for each origin that has had weather.
func (p *Pasture) WeatherInfo() adminapi.WeatherInfo {
	p.wx.mu.Lock()
	f, since, changes := p.sky.Now(), p.wx.since, p.wx.changes
	p.wx.mu.Unlock()
	served := len(p.cfg.World.Origins)
	info := adminapi.WeatherInfo{Spec: f.Spec().String(), Since: since, Changes: changes, Now: time.Now(), Served: served,
		Counts: map[string]int{}, Origins: []adminapi.WeatherOrigin{}}
	for _, a := range f.Origins() {
		info.Origins = append(info.Origins, adminapi.WeatherOrigin{Host: a.Host, Kind: a.Kind.String(), Condition: a.Condition.String()})
		info.Counts[a.Kind.String()]++
	}
	if clear := served - len(info.Origins); clear > 0 {
		info.Counts[weather.Clear.String()] = clear
	}
	info.Answered = map[string]adminapi.WeatherAnswered{}
	for h, a := range p.sky.Answered() {
		info.Answered[h] = adminapi.WeatherAnswered{Deliveries: a.Deliveries, Documents: a.Documents,
			Connections: a.Connections, Handshakes: a.Handshakes, Lookups: a.Lookups}
	}
	return info
}

// weatherRoutes serves adminapi's weather routes with handle.
func (p *Pasture) weatherRoutes(handle func(pattern string, h http.Handler)) {
	handle(string(adminapi.RouteWeather), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminapi.WriteJSON(w, http.StatusOK, p.WeatherInfo())
	}))
	handle(string(adminapi.RouteWeatherSet), http.HandlerFunc(p.serveWeatherSet))
	handle(string(adminapi.RouteWeatherClear), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.changeWeather(w, weather.Spec{})
	}))
}

// serveWeatherSet reads {"spec": "..."} and puts it in force; a body
// without a spec is refused rather than read as clear, since a misspelt
// field would otherwise clear the weather.
func (p *Pasture) serveWeatherSet(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Spec *string `json:"spec"`
	}
	if err := adminapi.DecodeStrictBody(w, r, 0, &body); err != nil && !errors.Is(err, adminapi.ErrEmptyBody) {
		adminapi.WriteError(w, adminapi.BodyStatus(err), fmt.Sprintf("the body is not {\"spec\": \"...\"}: %v", err))
		return
	}
	if body.Spec == nil {
		adminapi.WriteError(w, http.StatusBadRequest, `no spec: send {"spec": "down=5%,slow=flood2.test:30s"} (DELETE clears the weather)`)
		return
	}
	spec, err := weather.ParseSpec(*body.Spec)
	if err != nil {
		adminapi.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	p.changeWeather(w, spec)
}

// changeWeather puts spec in force and answers the weather then; a spec
// the world cannot fill is 400 and changes nothing.
func (p *Pasture) changeWeather(w http.ResponseWriter, spec weather.Spec) {
	p.wx.changing.Lock()
	defer p.wx.changing.Unlock()
	changed, err := p.setWeather(spec)
	if err != nil {
		status := http.StatusInternalServerError
		if errors.Is(err, weather.ErrSpec) {
			status = http.StatusBadRequest
		}
		adminapi.WriteError(w, status, err.Error())
		return
	}
	info := p.WeatherInfo()
	if changed {
		p.log.Info("weather changed", zap.String("spec", info.Spec), zap.Any("origins", info.Counts))
	} else {
		p.log.Info("weather unchanged: the same weather was in force already", zap.String("spec", info.Spec), zap.Time("since", info.Since))
	}
	adminapi.WriteJSON(w, http.StatusOK, info)
}
