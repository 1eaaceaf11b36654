package adminapi_test

import (
	"testing"

	"github.com/crowdfed/crowd/adminapi"
)

// TestForgedVerdict: the verdict a forged send's answer gives, as the
// flood's security section gives it for the same answers.
func TestForgedVerdict(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string
	}{
		{202, adminapi.ForgedAccepted},  // taken: a finding
		{200, adminapi.ForgedAccepted},  // any 2xx
		{401, adminapi.ForgedRefused},   // the signature refused
		{403, adminapi.ForgedRefused},   // forbidden
		{400, adminapi.ForgedRefused},   // a bad request (a Digest that does not match)
		{404, adminapi.ForgedNoVerdict}, // no such inbox: an honest send there fails alike
		{410, adminapi.ForgedNoVerdict}, // gone, alike
		{429, adminapi.ForgedNoVerdict}, // rate limited: about the load, not the forgery
		{500, adminapi.ForgedNoVerdict}, // the SUT failed
		{302, adminapi.ForgedNoVerdict}, // a redirect judges nothing
		{0, adminapi.ForgedNoVerdict},   // no answer
	} {
		if got := adminapi.ForgedVerdict(c.status); got != c.want {
			t.Errorf("%d: %q, want %q", c.status, got, c.want)
		}
	}
}
