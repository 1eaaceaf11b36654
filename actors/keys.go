package actors

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// KeyBits is the size of every actor's RSA key: what Mastodon, GoToSocial
// and Fedify generate and expect.
const KeyBits = 2048

// ErrKeyFile marks a key file in the state directory that cannot be used.
var ErrKeyFile = errors.New("unusable key file")

// keyPath is where one actor's private key lives in the state directory.
func keyPath(stateDir, host, name string) string {
	return filepath.Join(stateDir, "keys", host, name+".pem")
}

// loadOrGenerateKeys fills every actor's Key: loaded from the state
// directory where present, otherwise generated (in parallel, one worker
// per core) and persisted before the world is served. A key, once written,
// is never replaced: real servers cache keys by keyId and a changed key
// silently breaks them.
func loadOrGenerateKeys(stateDir string, actors []*Actor) error {
	jobs := make(chan *Actor)
	errs := make(chan error, len(actors))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range jobs {
				if err := loadOrGenerateKey(stateDir, a); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, a := range actors {
		jobs <- a
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func loadOrGenerateKey(stateDir string, a *Actor) error {
	path := keyPath(stateDir, a.Origin.Host, a.Name)
	key, err := readKey(path)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist):
		if key, err = rsa.GenerateKey(rand.Reader, KeyBits); err != nil {
			return fmt.Errorf("generate key for %s: %w", a.Acct(), err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("encode key for %s: %w", a.Acct(), err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
		}
		if err := atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
			return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
		}
	default:
		return err
	}
	return a.setKey(key)
}

func readKey(path string) (*rsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%w: %s holds no PEM block (delete it to make a new key, and wipe the SUT's cached keys)", ErrKeyFile, path)
	}
	var parsed any
	switch block.Type {
	case "PRIVATE KEY":
		parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("%w: %s holds a %q block, want PRIVATE KEY", ErrKeyFile, path, block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKeyFile, path, err)
	}
	key, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s is not an RSA key", ErrKeyFile, path)
	}
	key.Precompute()
	return key, nil
}
