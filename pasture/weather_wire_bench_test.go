package pasture

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/pasture/nameserver"
	"github.com/crowdfed/crowd/pasture/weather"
)

// benchWeather puts 10 % of the origins in the conditions met below HTTP
// (and a black hole), 2 % each.
const benchWeather = "down=2%,tls-expired=2%,tls-wrong-name=2%,nxdomain=2%,blackhole=2%"

// BenchmarkWireWeather measures full TLS handshakes/s and DNS answers/s
// for clear origins, in clear weather and with 10 % of the origins in bad
// weather: what healthy origins pay for the weather of others. Each
// iteration is a pair of equal slices, one in each weather, in turns
// clear-first and weather-first, so that a busy machine's drift falls on
// both; "ratio" is the median of the pairs'
// weather/clear rates (target ≥ 0.95):
//
//	go test -run '^$' -bench BenchmarkWireWeather -benchtime 40x ./pasture/
func BenchmarkWireWeather(b *testing.B) {
	w := openWorld(b, actors.Config{Origins: 100, Actors: 1, KeyPool: 2, Domain: "flood%d.test"})
	p := testPasture(b, Config{World: w, HTTPSAddr: "127.0.0.1:0", DNSAddr: "127.0.0.1:0",
		Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSUpstreams: []string{}})
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Shutdown(ctx) })
	spec, clear := benchSky(b, w)
	benchHandshakes(b, p.Addr("https"), clear) // every leaf made first, as in a long run
	for _, probe := range []struct {
		name, unit string
		slice      int // requests in a slice
		do         func(b *testing.B, names []string)
	}{
		// Full TLS handshakes by SNI name, each on a new connection.
		{"tls", "handshakes/s", 200, func(b *testing.B, names []string) { benchHandshakes(b, p.Addr("https"), names) }},
		// DNS A queries over UDP.
		{"dns", "answers/s", 2000, func(b *testing.B, names []string) { benchQueries(b, p.Addr("dns"), names) }},
	} {
		b.Run(probe.name, func(b *testing.B) {
			names := make([]string, probe.slice)
			for i := range names {
				names[i] = clear[i%len(clear)]
			}
			defer p.SetWeather(weather.Spec{})
			var clearRates, ratios []float64
			order := []int{0, 1}
			for b.Loop() {
				var rate [2]float64
				for _, j := range order {
					sky := []weather.Spec{{}, spec}[j]
					if err := p.SetWeather(sky); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					var wg sync.WaitGroup
					for half := range 2 { // two clients at a time
						wg.Go(func() { probe.do(b, names[half*len(names)/2:(half+1)*len(names)/2]) })
					}
					wg.Wait()
					rate[j] = float64(len(names)) / time.Since(start).Seconds()
				}
				slices.Reverse(order) // clear first, then weather first: drift falls on both
				clearRates = append(clearRates, rate[0])
				ratios = append(ratios, rate[1]/rate[0])
			}
			b.ReportMetric(median(clearRates), probe.unit)
			b.ReportMetric(median(ratios), "ratio")
		})
	}
}

// BenchmarkWireWeatherCalls is the same comparison without the network,
// steadier on a busy machine: the work a clear origin's handshake does to
// pick its certificate (GetConfigForClient, then GetCertificate) and the
// DNS handler's answer to its A query, per call, in clear weather and with
// 10 % of the origins in bad weather. A full handshake costs about 1 ms
// and a UDP query about 50 µs here: the difference of the two rows over
// those is what the weather costs a clear origin.
//
//	go test -run '^$' -bench BenchmarkWireWeatherCalls -count 5 ./pasture/
func BenchmarkWireWeatherCalls(b *testing.B) {
	w := openWorld(b, actors.Config{Origins: 100, Actors: 1, KeyPool: 2, Domain: "flood%d.test"})
	p := testPasture(b, Config{World: w, DNSAddr: "127.0.0.1:0", Advertise: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSUpstreams: []string{}})
	spec, clear := benchSky(b, w)
	tc, err := p.originTLS()
	if err != nil {
		b.Fatal(err)
	}
	dh, err := nameserver.NewHandler(p.dnsConfig())
	if err != nil {
		b.Fatal(err)
	}
	hellos := make([]*tls.ClientHelloInfo, len(clear))
	queries := make([]*dns.Msg, len(clear))
	for i, h := range clear {
		hellos[i] = &tls.ClientHelloInfo{ServerName: h}
		queries[i] = new(dns.Msg).SetQuestion(h+".", dns.TypeA)
	}
	for _, sky := range []struct {
		name string
		spec weather.Spec
	}{{"clear", weather.Spec{}}, {"weather10", spec}} {
		if err := p.SetWeather(sky.spec); err != nil {
			b.Fatal(err)
		}
		b.Run("tls/"+sky.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				hello := hellos[i%len(hellos)]
				i++
				if c, err := tc.GetConfigForClient(hello); c != nil || err != nil {
					b.Fatalf("%s: %v %v", hello.ServerName, c, err)
				}
				if _, err := tc.GetCertificate(hello); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("dns/"+sky.name, func(b *testing.B) {
			var out discardDNS
			i := 0
			for b.Loop() {
				dh.ServeDNS(&out, queries[i%len(queries)])
				i++
				if out.rcode != dns.RcodeSuccess {
					b.Fatalf("rcode %d", out.rcode)
				}
			}
		})
	}
	p.SetWeather(weather.Spec{})
}

// discardDNS is a dns.ResponseWriter over UDP that keeps only the last
// answer's rcode.
type discardDNS struct{ rcode int }

func (w *discardDNS) LocalAddr() net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53} }
func (w *discardDNS) RemoteAddr() net.Addr {
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
}
func (w *discardDNS) WriteMsg(m *dns.Msg) error   { w.rcode = m.Rcode; return nil }
func (w *discardDNS) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardDNS) Close() error                { return nil }
func (w *discardDNS) TsigStatus() error           { return nil }
func (w *discardDNS) TsigTimersOnly(bool)         {}
func (w *discardDNS) Hijack()                     {}

// benchSky is benchWeather and the origins of w it leaves clear: the ones
// measured, in both weathers.
func benchSky(b *testing.B, w *actors.World) (weather.Spec, []string) {
	spec, err := weather.ParseSpec(benchWeather)
	if err != nil {
		b.Fatal(err)
	}
	f, err := weather.Assign(spec, w.Hosts(), weatherSeed)
	if err != nil {
		b.Fatal(err)
	}
	var clear []string
	for _, h := range w.Hosts() {
		if f.Condition(h).Kind == weather.Clear {
			clear = append(clear, h)
		}
	}
	return spec, clear
}

// benchHandshakes completes a full handshake (no resumption) with addr for
// each of names.
func benchHandshakes(b *testing.B, addr string, names []string) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	for _, name := range names {
		c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{ServerName: name, InsecureSkipVerify: true})
		if err != nil {
			b.Error(err)
			return
		}
		c.Close()
	}
}

// benchQueries asks addr over UDP for the A record of each of names.
func benchQueries(b *testing.B, addr string, names []string) {
	co, err := dns.Dial("udp", addr)
	if err != nil {
		b.Error(err)
		return
	}
	defer co.Close()
	m := new(dns.Msg)
	for _, name := range names {
		m.SetQuestion(name+".", dns.TypeA)
		co.SetDeadline(time.Now().Add(2 * time.Second))
		if err := co.WriteMsg(m); err != nil {
			b.Error(err)
			return
		}
		in, err := co.ReadMsg()
		if err != nil || in.Rcode != dns.RcodeSuccess || len(in.Answer) != 1 {
			b.Errorf("%s: %v %v", name, in, err)
			return
		}
	}
}
