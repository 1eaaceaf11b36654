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
	"sync/atomic"
	"time"

	"go.uber.org/zap"

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

// keyEstimate is a rough time to make one RSA-2048 key on one core of a
// small machine (it varies several-fold from key to key): only for the
// first estimate a user sees; progress lines use the measured rate.
const keyEstimate = 250 * time.Millisecond

// progressEvery is how often key making reports its progress.
const progressEvery = 5 * time.Second

// loadOrGenerateKeys fills every actor's Key: loaded from the state
// directory where present, otherwise (when create is set) generated in
// parallel, one worker per core, and persisted before the world is served,
// with progress logged (a first start takes tens of seconds). A key, once
// written, is never replaced: real servers cache keys by keyId and a
// changed key silently breaks them.
func loadOrGenerateKeys(stateDir string, actors []*Actor, create bool, log *zap.Logger) error {
	var missing []*Actor
	var errs []error
	for _, a := range actors {
		key, err := readKey(keyPath(stateDir, a.Origin.Host, a.Name))
		switch {
		case err == nil:
			if err := a.setKey(key); err != nil {
				errs = append(errs, err)
			}
		case errors.Is(err, os.ErrNotExist) && create:
			missing = append(missing, a)
		case errors.Is(err, os.ErrNotExist):
			return fmt.Errorf("%w: --state %s has no key for %s: pass the --state of the crowd whose keys to use", ErrKeyFile, stateDir, a.Acct())
		default:
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 || len(missing) == 0 {
		return errors.Join(errs...)
	}
	return generateKeys(stateDir, missing, log)
}

// generateKeys makes, persists and sets the keys of actors, logging what it
// does: how many, an estimate, progress every few seconds and the end.
func generateKeys(stateDir string, actors []*Actor, log *zap.Logger) error {
	workers := min(runtime.GOMAXPROCS(0), len(actors))
	start := time.Now()
	log.Info("making the actors' keys: only on a first start, they are kept in --state",
		zap.Int("keys", len(actors)), zap.String("kind", fmt.Sprintf("RSA-%d", KeyBits)), zap.Int("workers", workers),
		zap.String("state", stateDir), zap.Duration("estimate", (keyEstimate*time.Duration(len(actors))/time.Duration(workers)).Round(time.Second)))
	jobs := make(chan *Actor)
	errs := make(chan error, len(actors))
	var made atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for a := range jobs {
				if err := generateKey(stateDir, a); err != nil {
					errs <- err
					continue
				}
				made.Add(1)
			}
		}()
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
				fields := []zap.Field{zap.Int64("made", n), zap.Int("of", len(actors))}
				if n > 0 {
					el := time.Since(start)
					fields = append(fields, zap.Duration("left", (el*time.Duration(int64(len(actors))-n)/time.Duration(n)).Round(time.Second)))
				}
				log.Info("making keys", fields...)
			}
		}
	}()
	for _, a := range actors {
		jobs <- a
	}
	close(jobs)
	wg.Wait()
	close(finished)
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return err
	}
	log.Info("keys made", zap.Int("keys", len(actors)), zap.Duration("took", time.Since(start).Round(time.Millisecond)))
	return nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func generateKey(stateDir string, a *Actor) error {
	path := keyPath(stateDir, a.Origin.Host, a.Name)
	key, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
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
