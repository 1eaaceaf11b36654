package loadrun

import (
	"strings"
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

func TestAttachedPlan(t *testing.T) {
	cases := []struct {
		name    string
		info    adminapi.WorldInfo
		host    string // an origin whose address is checked
		want    string // its address; "" when no plan
		wantErr string
	}{
		// a crowd whose origins share one address says nothing: no plan, sends as before
		{name: "shared", info: adminapi.WorldInfo{Domain: "flood%d.test"}},
		// the whole world's origin count and the shard count decide the slices, not this shard's origins
		{name: "sharded range", info: adminapi.WorldInfo{Domain: "flood%d.test", Shard: "1/4",
			Addresses: &adminapi.AddressInfo{Advertise: "10.251.0.0/16", Origins: 20}}, host: "flood6.test", want: "10.251.64.1"},
		// unsharded: origin k at the k-th address
		{name: "range", info: adminapi.WorldInfo{Domain: "flood%d.test",
			Addresses: &adminapi.AddressInfo{Advertise: "127.1.0.0/16", Origins: 1000}}, host: "flood1000.test", want: "127.1.3.231"},
		// a crowd describing a range too small for its world is not believed
		{name: "too small", info: adminapi.WorldInfo{Domain: "flood%d.test",
			Addresses: &adminapi.AddressInfo{Advertise: "127.1.0.0/30", Origins: 20}}, wantErr: "cannot have"},
		// nor one that does not parse
		{name: "garbage", info: adminapi.WorldInfo{Domain: "flood%d.test",
			Addresses: &adminapi.AddressInfo{Advertise: "nope", Origins: 20}}, wantErr: "127.0.0.1:9180"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, err := attachedPlan(c.info, "127.0.0.1:9180")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.want == "" {
				if plan != nil {
					t.Fatalf("plan = %v for a shared address", plan)
				}
				return
			}
			if got := plan.HostAddrs(c.host); len(got) != 1 || got[0].String() != c.want {
				t.Errorf("HostAddrs(%s) = %v, want %s", c.host, got, c.want)
			}
		})
	}
}
