package actors

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crowdfed/crowd/signing"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// KeyBits is the size of every actor's RSA key: what Mastodon, GoToSocial
// and Fedify generate and expect.
const KeyBits = 2048

// ErrKeyFile marks a key file in the state directory that cannot be used.
var ErrKeyFile = errors.New("unusable key file")

// keyPath is where one actor's private key lives in the state directory
// when every actor has its own key.
func keyPath(stateDir, host, name string) string {
	return filepath.Join(stateDir, "keys", host, name+".pem")
}

// keyEstimate is a rough time to make one RSA-2048 key on one core of a
// small machine (it varies several-fold from key to key): only for the
// first estimate a user sees; progress lines use the measured rate.
const keyEstimate = 60 * time.Millisecond

// progressEvery is how often key making reports its progress.
const progressEvery = 5 * time.Second

// keyEntry is one key of the world: its file, and the key parsed from it
// on first use (a million actors start in milliseconds because no PEM is
// parsed at start). It is the actors' signing.Key: several actors share
// one entry when keys come from a pool. Safe for concurrent use.
type keyEntry struct {
	path    string
	log     *zap.Logger
	backend signing.Backend // the world's (--crypto); nil is Go's

	once   sync.Once
	key    *rsa.PrivateKey
	signer signing.Key // key as the backend prepared it, once, on first use
	pubPEM string
	err    error
}

// load parses the key file once; a file that became unusable after the
// world opened is logged once and every signature with it fails.
func (e *keyEntry) load() error {
	e.once.Do(func() {
		key, err := readKey(e.path)
		if err == nil {
			var der []byte
			if der, err = x509.MarshalPKIXPublicKey(&key.PublicKey); err == nil {
				e.key, e.pubPEM = key, string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
			}
		}
		if err == nil {
			b := e.backend
			if b == nil {
				b = signing.GoBackend()
			}
			e.signer, err = b.PrivateKey(key)
		}
		if err != nil {
			e.err = fmt.Errorf("%w: %v", ErrKeyFile, err)
			e.log.Error("an actor key cannot be loaded: its actors cannot sign", zap.String("file", e.path), zap.Error(err))
		}
	})
	return e.err
}

// Public is the key's public half, nil when its file cannot be loaded.
func (e *keyEntry) Public() crypto.PublicKey {
	if e.load() != nil {
		return nil
	}
	return &e.key.PublicKey
}

// Sign signs with the private key (crypto.Signer), loading it first.
func (e *keyEntry) Sign(r io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	if err := e.load(); err != nil {
		return nil, err
	}
	return e.signer.Sign(r, digest, opts)
}

// BackendName names the backend the entry signs with, as a key of a backend
// other than Go names it.
func (e *keyEntry) BackendName() string {
	if e.backend == nil {
		return signing.BackendGo
	}
	return e.backend.Name()
}

// publicPEM is the SPKI PEM of the public key ("" when it cannot be loaded).
func (e *keyEntry) publicPEM() string {
	if e.load() != nil {
		return ""
	}
	return e.pubPEM
}

// missingKeys checks that every entry's file exists (a stat each, no
// parsing) and returns the indexes of the missing ones; borrowing (another
// process's state, never written) a missing key is an error.
func missingKeys(stateDir string, entries []*keyEntry, borrow bool) ([]int, error) {
	var missing []int
	var errs []error
	for i, e := range entries {
		st, err := os.Stat(e.path)
		switch {
		case err == nil && st.Mode().IsRegular():
		case err == nil:
			errs = append(errs, fmt.Errorf("%w: %s is not a file", ErrKeyFile, e.path))
		case errors.Is(err, os.ErrNotExist) && borrow:
			return nil, fmt.Errorf("%w: --state %s has no key %s: pass the --state of the crowd whose keys to use", ErrKeyFile, stateDir, e.path)
		case errors.Is(err, os.ErrNotExist):
			missing = append(missing, i)
		default:
			errs = append(errs, fmt.Errorf("%w: %v", ErrKeyFile, err))
		}
	}
	return missing, errors.Join(errs...)
}

// generateKeys makes and persists the keys of entries, logging what it
// does: why (the reason after "making the actors' keys: "), how many, an
// estimate, progress every few seconds and the end. A key, once written,
// is never replaced: real servers cache keys by keyId and a changed key
// silently breaks them. When ctx is done it stops within one key's time
// (the keys being made are finished and written, whole) and returns an
// error wrapping ctx.Err(): the keys written stay, and the next start
// makes only the others.
func generateKeys(ctx context.Context, stateDir string, entries []*keyEntry, why string, log *zap.Logger) error {
	workers := min(runtime.GOMAXPROCS(0), len(entries))
	start := time.Now()
	log.Info("making the actors' keys: "+why,
		zap.Int("keys", len(entries)), zap.String("kind", fmt.Sprintf("RSA-%d", KeyBits)), zap.Int("workers", workers),
		zap.String("state", stateDir), zap.Duration("estimate", (keyEstimate*time.Duration(len(entries))/time.Duration(workers)).Round(time.Second)))
	jobs := make(chan *keyEntry)
	errs := make(chan error, len(entries))
	var made atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for e := range jobs {
				if ctx.Err() != nil {
					continue // a job taken as the interruption came: one key's time saved
				}
				if err := generateKey(e.path); err != nil {
					errs <- err
					continue
				}
				made.Add(1)
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-finished:
				return
			case <-tick.C:
				n := made.Load()
				fields := []zap.Field{zap.Int64("made", n), zap.Int("of", len(entries))}
				if n > 0 {
					el := time.Since(start)
					fields = append(fields, zap.Duration("left", (el*time.Duration(int64(len(entries))-n)/time.Duration(n)).Round(time.Second)))
				}
				log.Info("making keys", fields...)
			}
		}
	}()
feed:
	for _, e := range entries {
		select {
		case jobs <- e:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(finished)
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		n := made.Load()
		log.Info("key making interrupted: the keys made are kept", zap.Int64("made", n), zap.Int("of", len(entries)))
		return fmt.Errorf("interrupted while making the actors' keys (%d of %d made, kept in --state %s: the next start makes the other %d): %w",
			n, len(entries), stateDir, int64(len(entries))-n, err)
	}
	log.Info("keys made", zap.Int("keys", len(entries)), zap.Duration("took", time.Since(start).Round(time.Millisecond)))
	return nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func generateKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return fmt.Errorf("generate key %s: %w", path, err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode key %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("persist key %s: %w", path, err)
	}
	if err := atomicfile.Write(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("persist key %s: %w", path, err)
	}
	return nil
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
