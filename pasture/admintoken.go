package pasture

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// ErrAdminToken marks an admin token that cannot be used: too short, with
// characters a header cannot carry, or a token file that cannot be read or
// made.
var ErrAdminToken = errors.New("admin token")

// AdminTokenFile is the name, in the state directory, of the token an
// admin API off loopback requires when none is given: made on the first
// start that needs it and reused after, so a CLI on the same machine
// finds it.
const AdminTokenFile = "admin-token"

// minAdminToken is the shortest token taken: a short one could be guessed
// by a client that may try as often as it likes.
const minAdminToken = 16

// AdminOffLoopback reports whether the admin API's listen address admin
// is reachable from elsewhere than this machine, and so needs a token:
// anything but a loopback IP literal. A wildcard (":9180", "0.0.0.0",
// "[::]") listens everywhere; a host name, localhost included, could
// resolve to anything.
func AdminOffLoopback(admin string) bool {
	host, _, err := net.SplitHostPort(admin)
	if err != nil {
		host = admin
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip == nil || !ip.IsLoopback()
}

// CheckAdminToken says why token cannot be an admin token (an error
// wrapping ErrAdminToken), or nil.
func CheckAdminToken(token string) error {
	if len(token) < minAdminToken {
		return fmt.Errorf("%w: %d characters, want at least %d", ErrAdminToken, len(token), minAdminToken)
	}
	for _, c := range token {
		if c <= ' ' || c > '~' {
			return fmt.Errorf("%w: only printable ASCII without spaces can be sent in a header", ErrAdminToken)
		}
	}
	return nil
}

// ReadAdminToken reads the token file of the state directory dir: the
// token, or an error (one wrapping fs.ErrNotExist when the crowd never
// made one there).
func ReadAdminToken(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, AdminTokenFile))
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if err := CheckAdminToken(token); err != nil {
		return "", fmt.Errorf("%s: %w (remove the file: the crowd makes a new token at its next start)", filepath.Join(dir, AdminTokenFile), err)
	}
	return token, nil
}

// loadOrMakeAdminToken reads the token file of dir, or makes it (32 random
// bytes as hex, mode 0600: only the crowd's user reads it) when there is
// none. Of two starts at once one makes it and the other reads it.
func loadOrMakeAdminToken(dir string) (string, error) {
	token, err := ReadAdminToken(dir)
	if !errors.Is(err, fs.ErrNotExist) {
		return token, wrapTokenErr(err)
	}
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	token = hex.EncodeToString(b)
	err = atomicfile.Create(filepath.Join(dir, AdminTokenFile), []byte(token+"\n"), 0o600)
	if errors.Is(err, fs.ErrExist) {
		token, err = ReadAdminToken(dir)
	}
	return token, wrapTokenErr(err)
}

// wrapTokenErr marks err (nil stays nil) as the admin token's.
func wrapTokenErr(err error) error {
	if err == nil || errors.Is(err, ErrAdminToken) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrAdminToken, err)
}
