package originaddr

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	cases := []struct {
		in      string
		v4, v6  []string // the prefixes read, masked
		wantErr string
	}{
		// the loopback block every namespace has on lo
		{in: "127.1.0.0/16", v4: []string{"127.1.0.0/16"}},
		// one address: shared by every origin, as before ranges existed
		{in: "10.0.0.5", v4: []string{"10.0.0.5/32"}},
		// dual stack, with spaces after commas
		{in: "10.0.0.5, fd00::5", v4: []string{"10.0.0.5/32"}, v6: []string{"fd00::5/128"}},
		// a prefix not on its boundary starts at its first address
		{in: "10.0.0.7/24", v4: []string{"10.0.0.0/24"}},
		// IPv4-mapped IPv6 counts as IPv4
		{in: "::ffff:10.1.0.0/112", v4: []string{"10.1.0.0/16"}},
		// several blocks, in order
		{in: "10.1.0.0/24,10.2.0.0/24", v4: []string{"10.1.0.0/24", "10.2.0.0/24"}},
		// garbage names the bad item
		{in: "127.1.0.0/16,nope", wantErr: `"nope" is neither`},
		// a prefix length past the address size
		{in: "10.0.0.0/33", wantErr: "neither"},
		// the unspecified address reaches nobody
		{in: "0.0.0.0", wantErr: "unspecified"},
		// nothing at all
		{in: " , ", wantErr: "no address"},
		// a zone has no place in an advertised address
		{in: "fe80::1%eth0", wantErr: "neither"},
	}
	for _, c := range cases {
		r, err := ParseRange(c.in)
		if c.wantErr != "" {
			if err == nil || !errors.Is(err, ErrRange) || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "--advertise") {
				t.Errorf("ParseRange(%q) err = %v, want one naming --advertise and containing %q", c.in, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRange(%q): %v", c.in, err)
			continue
		}
		if got := prefixStrings(r.v4); !slices.Equal(got, c.v4) {
			t.Errorf("ParseRange(%q) v4 = %v, want %v", c.in, got, c.v4)
		}
		if got := prefixStrings(r.v6); !slices.Equal(got, c.v6) {
			t.Errorf("ParseRange(%q) v6 = %v, want %v", c.in, got, c.v6)
		}
	}
}

func prefixStrings(ps []netip.Prefix) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}

func mustPlan(t *testing.T, spec string, origins, shards int) *Plan {
	t.Helper()
	r, err := ParseRange(spec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(r, "flood%d.test", origins, shards)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPlanAddrs(t *testing.T) {
	cases := []struct {
		spec           string
		origins, shard int
		k              int
		want           []string
	}{
		// origin k is the k-th address, the first one included
		{"127.1.0.0/16", 1000, 0, 1, []string{"127.1.0.0"}},
		{"127.1.0.0/16", 1000, 0, 1000, []string{"127.1.3.231"}},
		// the count carries across octets
		{"127.1.0.0/16", 1000, 0, 257, []string{"127.1.1.0"}},
		// a list continues in the next block
		{"10.1.0.0/30,10.2.0.0/30", 8, 0, 5, []string{"10.2.0.0"}},
		// one address is shared
		{"10.0.0.5", 20, 0, 17, []string{"10.0.0.5"}},
		// dual stack: a range of each
		{"127.1.0.0/24,fd00::/120", 20, 0, 3, []string{"127.1.0.2", "fd00::2"}},
		// a range for IPv4, one shared IPv6 address
		{"127.1.0.0/24,fd00::5", 20, 0, 3, []string{"127.1.0.2", "fd00::5"}},
		// 4 shards of a /16: shard (k-1) mod 4 takes its /18; origin 1 is shard 0's first
		{"10.200.0.0/16", 20, 4, 1, []string{"10.200.0.0"}},
		// origin 2 is shard 1's first: 10.200.64.0
		{"10.200.0.0/16", 20, 4, 2, []string{"10.200.64.0"}},
		// origin 6 is shard 1's second
		{"10.200.0.0/16", 20, 4, 6, []string{"10.200.64.1"}},
		// origin 20 is shard 3's fifth
		{"10.200.0.0/16", 20, 4, 20, []string{"10.200.192.4"}},
		// no such origin
		{"10.200.0.0/16", 20, 4, 21, nil},
		{"10.200.0.0/16", 20, 4, 0, nil},
	}
	for _, c := range cases {
		p := mustPlan(t, c.spec, c.origins, c.shard)
		var got []string
		for _, a := range p.Addrs(c.k) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s, %d origins, %d shards: Addrs(%d) = %v, want %v", c.spec, c.origins, c.shard, c.k, got, c.want)
		}
	}
}

// Every origin of a world gets an address no other origin has, in each
// shard layout, and shard i's addresses lie in its own slice.
func TestPlanDistinct(t *testing.T) {
	for _, shards := range []int{1, 3, 4, 7} {
		p := mustPlan(t, "127.1.0.0/16", 10000, shards)
		seen := map[netip.Addr]int{}
		slice := uint32(65536 / shards)
		for k := 1; k <= 10000; k++ {
			a := p.Addrs(k)[0]
			if prev, dup := seen[a]; dup {
				t.Fatalf("%d shards: origins %d and %d share %s", shards, prev, k, a)
			}
			seen[a] = k
			b := a.As4()
			off := uint32(b[2])<<8 | uint32(b[3])
			if int(off/slice) != (k-1)%shards {
				t.Fatalf("%d shards: origin %d at %s, outside shard %d's slice", shards, k, a, (k-1)%shards)
			}
		}
	}
}

func TestPlanTooSmall(t *testing.T) {
	cases := []struct {
		spec            string
		origins, shards int
		ok              bool
	}{
		// exactly enough
		{"127.1.0.0/30", 4, 1, true},
		// one short
		{"127.1.0.0/30", 5, 1, false},
		// 4 shards of /18 hold 16384 each: 10000 origins need 2500 each
		{"10.0.0.0/16", 10000, 4, true},
		// 3 shards of 4 addresses (a /28 cut in 3 leaves 5 each): 16 origins need 6 each
		{"10.0.0.0/28", 16, 3, false},
		// a single address never runs short
		{"10.0.0.1", 10000, 4, true},
		// the IPv6 half too small, the IPv4 one fine
		{"10.0.0.0/16,fd00::/126", 20, 1, false},
	}
	for _, c := range cases {
		r, err := ParseRange(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewPlan(r, "flood%d.test", c.origins, c.shards)
		if (err == nil) != c.ok {
			t.Errorf("NewPlan(%s, %d origins, %d shards) err = %v, want ok=%v", c.spec, c.origins, c.shards, err, c.ok)
		}
		if err != nil && (!errors.Is(err, ErrRange) || !strings.Contains(err.Error(), "--advertise")) {
			t.Errorf("error %v does not name --advertise", err)
		}
	}
}

func TestPlanOrigin(t *testing.T) {
	p := mustPlan(t, "127.1.0.0/16", 1000, 0)
	cases := []struct {
		host string
		want int
	}{
		{"flood1.test", 1},           // the first
		{"FLOOD1000.test.", 1000},    // case and the trailing dot
		{"flood42.test:8443", 42},    // a port
		{"flood1001.test", 0},        // past the world
		{"flood0.test", 0},           // origins are 1-based
		{"flood07.test", 0},          // no leading zeros: another name
		{"flood.test", 0},            // no number
		{"flood1.example", 0},        // another suffix
		{"xflood1.test", 0},          // another prefix
		{"flood99999999999.test", 0}, // a number too long
		{"flood-1.test", 0},          // a sign is no digit
		{"sub.flood1.test", 0},       // a name under an origin
	}
	for _, c := range cases {
		if got := p.Origin(c.host); got != c.want {
			t.Errorf("Origin(%q) = %d, want %d", c.host, got, c.want)
		}
		if c.want > 0 && p.Host(c.want) != strings.ToLower(strings.TrimSuffix(strings.Split(c.host, ":")[0], ".")) {
			t.Errorf("Host(%d) = %q, does not name %q", c.want, p.Host(c.want), c.host)
		}
	}
}

func TestPlanSlice(t *testing.T) {
	p := mustPlan(t, "10.200.0.0/16,fd00::1", 20, 4)
	if got, want := p.Slice(1), "10.200.64.0-10.200.64.4,fd00::1"; got != want {
		t.Errorf("Slice(1) = %q, want %q", got, want)
	}
	if got := p.Slice(4); got != "" {
		t.Errorf("Slice(4) of 4 shards = %q, want empty", got)
	}
}

func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"127.1.0.0/16", "10.0.0.5,fd00::5", "::ffff:10.0.0.0/104", "1.2.3.4/0", "fd00::/0"} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, spec string, k int) {
		r, err := ParseRange(spec)
		if err != nil {
			return
		}
		p, err := NewPlan(r, "flood%d.test", 50, 3)
		if err != nil {
			return
		}
		for _, a := range p.Addrs(k%60 + 1) {
			if !a.IsValid() || a.IsUnspecified() && !strings.Contains(spec, "/") {
				t.Fatalf("Addrs gave %v for %q", a, spec)
			}
		}
		_ = p.Slice(k % 4)
	})
}

func FuzzOrigin(f *testing.F) {
	for _, s := range []string{"flood1.test", "flood10000.test.", "flood01.test", "FLOOD3.TEST:443"} {
		f.Add(s)
	}
	p, err := NewPlan(Range{spec: "10.0.0.0/8", v4: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}, "flood%d.test", 10000, 0)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, host string) {
		k := p.Origin(host)
		if k == 0 {
			return
		}
		if k < 1 || k > 10000 || p.Origin(p.Host(k)) != k {
			t.Fatalf("Origin(%q) = %d, not a round trip", host, k)
		}
	})
}
