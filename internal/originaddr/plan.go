// Package originaddr gives each of the crowd's origins its own address, so
// that a server under test sees a distinct client per origin: its per-host
// and per-IP machinery (rate limits, delivery queues, caches) then works
// as it does in the fediverse. A Plan maps origin numbers and host names
// to addresses (the DNS answers with it, the listeners receive on it);
// Transport sends each request from its origin's address.
package originaddr

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrRange is wrapped by every error about an --advertise value: one that
// does not parse, or a range too small for the origins.
var ErrRange = errors.New("--advertise")

// maxCount caps the size counted of one family's range: a plan never needs
// more addresses than origins × shards, and an IPv6 /64 would overflow.
const maxCount = 1 << 40

// Range is a sequence of addresses, in the order given: the --advertise
// value, a comma-separated list of addresses and CIDR prefixes, IPv4 and
// IPv6 counted apart (the i-th IPv4 address is the i-th origin's A, the
// i-th IPv6 one its AAAA).
type Range struct {
	spec   string
	v4, v6 []netip.Prefix
}

// ParseRange reads an --advertise value: "127.1.0.0/16", "10.0.0.5",
// "10.0.0.5,fd00::5", "10.1.0.0/24,10.2.0.0/24". Addresses inside a
// prefix count from its first (the prefix is masked: "10.0.0.7/24" starts
// at 10.0.0.0). The error wraps ErrRange and names the bad item.
func ParseRange(spec string) (Range, error) {
	r := Range{spec: spec}
	for item := range strings.SplitSeq(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := ParseNetwork(item)
		if err != nil {
			return Range{}, fmt.Errorf("%w %q: %q is neither an IP address nor a CIDR prefix (127.1.0.0/16)", ErrRange, spec, item)
		}
		if p.Addr().IsUnspecified() {
			return Range{}, fmt.Errorf("%w %q: %s is the unspecified address, which no client can reach", ErrRange, spec, item)
		}
		if p.Addr().Is4() {
			r.v4 = append(r.v4, p)
		} else {
			r.v6 = append(r.v6, p)
		}
	}
	if len(r.v4)+len(r.v6) == 0 {
		return Range{}, fmt.Errorf("%w %q: no address", ErrRange, spec)
	}
	return r, nil
}

// ParseNetwork reads one network: a CIDR prefix, masked ("10.0.0.7/24" is
// 10.0.0.0/24), or an address alone, a network of one. An IPv4-mapped one
// is its IPv4 network (::ffff:10.0.0.0/120 is 10.0.0.0/24), as IPv4 peers
// are compared unmapped; a zoned address is none.
func ParseNetwork(item string) (netip.Prefix, error) {
	if strings.Contains(item, "/") {
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return netip.Prefix{}, err
		}
		a := p.Addr().Unmap()
		bits := p.Bits()
		if p.Addr().Is4In6() {
			bits -= 96
		}
		if bits < 0 {
			return netip.Prefix{}, errors.New("mapped prefix shorter than ::ffff:0:0/96")
		}
		return netip.PrefixFrom(a, bits).Masked(), nil
	}
	a, err := netip.ParseAddr(item)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, errors.New("not an address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// String is the value as given.
func (r Range) String() string { return r.spec }

// family is one address family's sequence of a Range.
type family struct {
	seq   []netip.Prefix
	count uint64 // addresses in seq, capped at maxCount
}

func newFamily(seq []netip.Prefix) family {
	f := family{seq: seq}
	for _, p := range seq {
		f.count = min(maxCount, f.count+prefixSize(p))
	}
	return f
}

func prefixSize(p netip.Prefix) uint64 {
	host := p.Addr().BitLen() - p.Bits()
	if host >= 40 {
		return maxCount
	}
	return 1 << host
}

// at is the i-th address of the sequence (0-based, i < count).
func (f family) at(i uint64) netip.Addr {
	for _, p := range f.seq {
		n := prefixSize(p)
		if i < n {
			return addOffset(p.Addr(), i)
		}
		i -= n
	}
	return netip.Addr{}
}

// addOffset is a + off, carrying across the address's bytes.
func addOffset(a netip.Addr, off uint64) netip.Addr {
	b := a.As16()
	for i := 15; i >= 0 && off > 0; i-- {
		sum := uint64(b[i]) + off&0xff
		b[i] = byte(sum)
		off = off>>8 + sum>>8
	}
	out := netip.AddrFrom16(b)
	if a.Is4() {
		out = out.Unmap()
	}
	return out
}

// Plan is where every origin of a world is reached: origin k (1-based, of
// the whole world, every shard's) answers at its own address of each
// family whose range holds more than one address; a family given as one
// address is shared by every origin, as a single crowd address always was.
//
// With n shards the range is cut into n equal slices, one per shard (a
// /16 in 4 shards: four /18), and origin k, of shard (k-1) mod n, takes
// the ((k-1) div n)-th address of its shard's slice. So each crowd of a
// fleet advertises a block of its own (one route per machine), every crowd
// computes every origin's address alike, and with one shard origin k is
// simply the k-th address. A Plan is immutable and safe for concurrent use.
type Plan struct {
	rng            Range
	prefix, suffix string // the domain pattern around %d, lower case
	origins        int
	shards         int
	v4, v6         family
}

// NewPlan plans rng for a world of origins origins named by domain (one
// %d) in shards shards (0 or 1: unsharded). The error wraps ErrRange and
// says how many addresses are needed when a family's range is too small.
func NewPlan(rng Range, domain string, origins, shards int) (*Plan, error) {
	prefix, suffix, ok := strings.Cut(strings.ToLower(strings.TrimSuffix(domain, ".")), "%d")
	if !ok || origins < 1 {
		return nil, fmt.Errorf("originaddr: domain %q with %d origins", domain, origins)
	}
	p := &Plan{rng: rng, prefix: prefix, suffix: suffix, origins: origins, shards: max(shards, 1),
		v4: newFamily(rng.v4), v6: newFamily(rng.v6)}
	perShard := (origins + p.shards - 1) / p.shards
	need := uint64(perShard) * uint64(p.shards)
	for _, f := range []family{p.v4, p.v6} {
		if f.count > 1 && f.count/uint64(p.shards) < uint64(perShard) {
			return nil, fmt.Errorf("%w %q holds %d addresses of a family, fewer than the %d needed for %d origins in %d shard(s) (one address each; a single address is shared by all)",
				ErrRange, rng.spec, f.count, need, origins, p.shards)
		}
	}
	return p, nil
}

// PerOrigin reports whether origins have addresses of their own (some
// family's range holds more than one address).
func (p *Plan) PerOrigin() bool { return p.v4.count > 1 || p.v6.count > 1 }

// Origins is the world's number of origins, every shard's.
func (p *Plan) Origins() int { return p.origins }

// Range is the range planned.
func (p *Plan) Range() Range { return p.rng }

// Addrs are origin k's addresses (1-based, any shard's): at most one IPv4
// and one IPv6, in that order; nil when k is no origin of the world.
func (p *Plan) Addrs(k int) []netip.Addr {
	if k < 1 || k > p.origins {
		return nil
	}
	out := make([]netip.Addr, 0, 2)
	for _, f := range []family{p.v4, p.v6} {
		if a, ok := p.addrOf(f, k); ok {
			out = append(out, a)
		}
	}
	return out
}

// addrOf is origin k's address in family f.
func (p *Plan) addrOf(f family, k int) (netip.Addr, bool) {
	switch f.count {
	case 0:
		return netip.Addr{}, false
	case 1:
		return f.at(0), true
	}
	n := uint64(p.shards)
	i := uint64(k - 1)
	return f.at((i%n)*(f.count/n) + i/n), true
}

// Host is origin k's host name.
func (p *Plan) Host(k int) string { return p.prefix + strconv.Itoa(k) + p.suffix }

// Origin is the origin number of host (case-insensitive, with or without
// the trailing dot and a port), or 0 when host is none of the world's.
func (p *Plan) Origin(host string) int {
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(h, "[") {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	num, ok := strings.CutPrefix(host, p.prefix)
	if !ok {
		return 0
	}
	if num, ok = strings.CutSuffix(num, p.suffix); !ok || num == "" || num[0] == '0' || len(num) > 9 {
		return 0
	}
	k, err := strconv.Atoi(num)
	if err != nil || k < 1 || k > p.origins || strconv.Itoa(k) != num {
		return 0
	}
	return k
}

// HostAddrs are the addresses of the origin named host; nil for a host
// that is none of the world's.
func (p *Plan) HostAddrs(host string) []netip.Addr { return p.Addrs(p.Origin(host)) }

// Slice describes shard i's part of the range, for a start-up log: the
// first and last address of each family it advertises.
func (p *Plan) Slice(i int) string {
	if i < 0 || i >= p.shards || i >= p.origins {
		return ""
	}
	var parts []string
	for _, f := range []family{p.v4, p.v6} {
		if f.count == 0 {
			continue
		}
		first, _ := p.addrOf(f, i+1)
		last := first
		if f.count > 1 {
			// The shard's last origin is the largest k ≡ i+1 (mod n) ≤ origins.
			k := i + 1 + (p.origins-i-1)/p.shards*p.shards
			last, _ = p.addrOf(f, k)
		}
		if first == last {
			parts = append(parts, first.String())
		} else {
			parts = append(parts, first.String()+"-"+last.String())
		}
	}
	return strings.Join(parts, ",")
}
