package e2e

import (
	"os"
	"testing"

	"github.com/crowdfed/crowd/signing"
)

// SigningBackend is the backend the tests sign and verify with in their
// own process: the one CROWD_CRYPTO names (auto when unset), which is also
// what every crowd binary they start reads. CI sets CROWD_CRYPTO=libcrypto
// for the end-to-end tests, so a build that lost libcrypto fails them
// instead of falling back to Go.
func SigningBackend(t testing.TB) signing.Backend {
	t.Helper()
	b, err := signing.NewBackend(os.Getenv("CROWD_CRYPTO"))
	if err != nil {
		t.Fatalf("CROWD_CRYPTO=%q: %v", os.Getenv("CROWD_CRYPTO"), err)
	}
	return b
}
