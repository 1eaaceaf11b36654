// Key rotation (`crowd keys rotate`): an actor gets a new key, under the
// key id it had (as real servers rotate) or a new one, and its old public
// keys under other ids keep answering at their ids until retired.

package actors

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// rotation is an actor's key history, persisted beside its key
// (keys/<host>/<name>.rotation.json) once it was first rotated.
type rotation struct {
	// Generation is the current key's: 1 is the key the actor was made
	// with, n > 1 the n-th.
	Generation int `json:"generation"`
	// KeyIDGeneration is the generation whose key id the current key goes
	// by: 1 is #main-key, n > 1 #main-key-n. 0 (rotations before it was
	// kept) means Generation: each rotation then took a new id.
	KeyIDGeneration int `json:"key_id_generation,omitempty"`
	// Current is the SHA-256 (hex) of the current public key's SPKI DER:
	// the key file must hold that key (see loadRotations).
	Current string `json:"current_sha256"`
	// Retained are the earlier public keys still served, newest first, in
	// the actor document's additionalPublicKeys (Misskey's list of extra
	// keys, which the crowd's verifier reads too): a SUT that verifies a
	// request signed before the rotation still finds the key at its id.
	Retained []PublicKeyDoc `json:"retained"`
}

// idGen is the generation whose key id the current key goes by.
func (r rotation) idGen() int {
	if r.KeyIDGeneration > 0 {
		return r.KeyIDGeneration
	}
	return r.Generation
}

func rotationPath(stateDir, host, name string) string {
	return filepath.Join(stateDir, "keys", host, name+".rotation.json")
}

// keyIDOf is the key id of generation gen of the actor id.
func keyIDOf(id string, gen int) string {
	if gen <= 1 {
		return id + "#main-key"
	}
	return id + "#main-key-" + strconv.Itoa(gen)
}

func spkiSHA256(pub *rsa.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

// rotatedKey is what the world keeps of one rotated actor: its key's
// generation, the keys it retained and its own key file
// (keys/<host>/<name>.pem, in a key-pool world too: the pool key it had
// is then the first it retained).
type rotatedKey struct {
	idGen    int // the generation whose key id the key goes by (rotation.KeyIDGeneration)
	retained []PublicKeyDoc
	key      *keyEntry
}

// rotations are the rotated actors of a world, by actor id: only they have
// an entry, so a million-actor world that never rotated pays a nil check
// per actor computed. The map is replaced, never changed, so computing
// actors needs no lock while a rotation happens.
type rotations struct {
	m atomic.Pointer[map[string]*rotatedKey]
}

// apply gives a (just computed by newActor) its rotated key, if any, and
// returns it: while of(a.ID) is still that one, a holds its current key.
func (r *rotations) apply(a *Actor) *rotatedKey {
	rk := r.of(a.ID)
	if rk != nil {
		a.KeyID, a.key, a.Key, a.retained = keyIDOf(a.ID, rk.idGen), rk.key, rk.key, rk.retained
	}
	return rk
}

// of is the rotated key of the actor id, nil for an actor never rotated.
// Each rotation records a new one, so a changed pointer is a rotation.
func (r *rotations) of(id string) *rotatedKey {
	m := r.m.Load()
	if m == nil {
		return nil
	}
	return (*m)[id]
}

// set records (or replaces) the rotated key of the actor id.
func (r *rotations) set(id string, rk *rotatedKey) {
	for {
		old := r.m.Load()
		next := make(map[string]*rotatedKey, 1)
		if old != nil {
			maps.Copy(next, *old)
		}
		next[id] = rk
		if r.m.CompareAndSwap(old, &next) {
			return
		}
	}
}

// loadRotations finds the rotated actors of w's state directory
// (keys/<host>/<name>.rotation.json; only a rotated actor has one) and
// records them, before any actor is computed. A rotation torn by a crash
// is finished or undone (unless the world borrows its keys: then it is an
// error): the new key is written to <name>.pem.new first, the rotation
// file second, the key file last; so a rotation file that names the .new
// key finishes the move, and a .new key without a rotation file is removed
// (that rotation never happened).
func loadRotations(w *World, log *zap.Logger) error {
	dir := w.Config.StateDir
	repair := !w.Config.BorrowKeys
	files, err := filepath.Glob(filepath.Join(dir, "keys", "*", "*.rotation.json"))
	if err != nil {
		return err
	}
	for _, rp := range files {
		host := filepath.Base(filepath.Dir(rp))
		o, ok := w.byHost[host]
		if !ok {
			continue // another shard's actor
		}
		name := strings.TrimSuffix(filepath.Base(rp), ".rotation.json")
		a, ok := o.Actor(name)
		if !ok || a.leaver {
			continue // an actor of a larger world than this one
		}
		rk, err := loadRotation(rp, keyPath(dir, host, name), a.Acct(), repair)
		if err != nil {
			return err
		}
		rk.key = &keyEntry{path: keyPath(dir, host, name), log: log, backend: w.Config.Backend}
		w.rotations.set(a.ID, rk)
	}
	if !repair {
		return nil
	}
	stray, err := filepath.Glob(filepath.Join(dir, "keys", "*", "*.pem.new"))
	if err != nil {
		return err
	}
	for _, p := range stray {
		if _, err := os.Stat(strings.TrimSuffix(p, ".pem.new") + ".rotation.json"); errors.Is(err, os.ErrNotExist) {
			os.Remove(p)
		}
	}
	return nil
}

// loadRotation reads the rotation file rp of the actor acct whose key file
// is kp, and repairs a torn rotation (see loadRotations) when repair.
func loadRotation(rp, kp, acct string, repair bool) (*rotatedKey, error) {
	b, err := os.ReadFile(rp)
	if err != nil {
		return nil, err
	}
	var r rotation
	if err := json.Unmarshal(b, &r); err != nil || r.Generation < 1 {
		return nil, fmt.Errorf("%w: %s: not a key rotation (%v)", ErrKeyFile, rp, err)
	}
	cur := ""
	if key, err := readKey(kp); err == nil {
		cur, _ = spkiSHA256(&key.PublicKey)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if cur != r.Current {
		if !repair {
			return nil, fmt.Errorf("%w: the key rotation of %s is unfinished: start the crowd (crowd serve) once to finish it", ErrKeyFile, acct)
		}
		next, err := readKey(kp + ".new")
		if err != nil {
			return nil, fmt.Errorf("%w: %s names a key that %s does not hold", ErrKeyFile, rp, kp)
		}
		if sum, _ := spkiSHA256(&next.PublicKey); sum != r.Current {
			return nil, fmt.Errorf("%w: %s names a key that neither %s nor its .new holds", ErrKeyFile, rp, kp)
		}
		if err := os.Rename(kp+".new", kp); err != nil {
			return nil, err
		}
	}
	if repair {
		os.Remove(kp + ".new")
	}
	return &rotatedKey{idGen: r.idGen(), retained: r.Retained}, nil
}

// RotateKey gives a new key to a crowd actor of w's state directory: a
// fresh RSA key, persisted in keys/<host>/<name>.pem before it returns (in
// a key-pool world too: the rotated actor leaves the pool). By default the
// key keeps the actor's key id, as real servers rotate (a Go server refused
// every request after a new id until an admin expired the domain's keys);
// the old key, which shared that id, is then dropped. With newKeyID it goes
// by the next key id (#main-key-2, -3 …) and the old public key stays in
// the actor's document (additionalPublicKeys). Either way retire drops
// every key retained earlier. It changes a and every later lookup of the
// actor, and drops its cached document: call it on a world that is not
// serving (`crowd keys rotate` on a stopped crowd), since a SUT must learn
// of the new key by an Update, not find it changed.
func (w *World) RotateKey(a *Actor, retire, newKeyID bool) error {
	dir := w.Config.StateDir
	w.rotations.apply(a) // a may predate an earlier rotation
	gen, idGen := 1, 1
	if r, err := os.ReadFile(rotationPath(dir, a.Origin.Host, a.Name)); err == nil {
		var old rotation
		if err := json.Unmarshal(r, &old); err != nil {
			return fmt.Errorf("%w: %v", ErrKeyFile, err)
		}
		gen, idGen = old.Generation, old.idGen()
	}
	oldPEM := a.PublicKeyPEM()
	if oldPEM == "" && newKeyID && !retire {
		return fmt.Errorf("%w: %s: its current key cannot be loaded, so it cannot be retained", ErrKeyFile, a.Acct())
	}
	key, err := rsa.GenerateKey(rand.Reader, KeyBits)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", a.Acct(), err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	kp := keyPath(dir, a.Origin.Host, a.Name)
	if err := os.MkdirAll(filepath.Dir(kp), 0o700); err != nil {
		return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
	}
	if err := atomicfile.Write(kp+".new", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
	}
	sum, err := spkiSHA256(&key.PublicKey)
	if err != nil {
		return err
	}
	r := rotation{Generation: gen + 1, KeyIDGeneration: idGen, Current: sum}
	switch {
	case retire:
	case newKeyID:
		r.KeyIDGeneration = idGen + 1 // ids are taken in order, so the next is unused
		r.Retained = append([]PublicKeyDoc{{ID: a.KeyID, Owner: a.ID, PublicKeyPem: oldPEM}}, a.retained...)
	default:
		// The old key shares the id the new one keeps: only keys under
		// other ids (from earlier --new-key-id rotations) stay.
		for _, k := range a.retained {
			if k.ID != a.KeyID {
				r.Retained = append(r.Retained, k)
			}
		}
	}
	if err := writeRotation(rotationPath(dir, a.Origin.Host, a.Name), r); err != nil {
		return fmt.Errorf("persist the key rotation of %s: %w", a.Acct(), err)
	}
	if err := os.Rename(kp+".new", kp); err != nil {
		return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
	}
	rk := &rotatedKey{idGen: r.idGen(), retained: r.Retained,
		key: &keyEntry{path: kp, log: w.keyLog(a), backend: w.Config.Backend}}
	w.rotations.set(a.ID, rk)
	w.rotations.apply(a)
	w.docs.Remove(a.ID)
	return nil
}

// RetireKeys stops serving a's earlier keys: requests signed with them
// are refused from now on. It changes a, as RotateKey does, and returns
// how many keys it retired (0: a kept none, and nothing changed).
func (w *World) RetireKeys(a *Actor) (int, error) {
	rp := rotationPath(w.Config.StateDir, a.Origin.Host, a.Name)
	b, err := os.ReadFile(rp)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil // never rotated: nothing retained
	}
	if err != nil {
		return 0, err
	}
	var r rotation
	if err := json.Unmarshal(b, &r); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrKeyFile, rp, err)
	}
	retired := len(r.Retained)
	if retired == 0 {
		return 0, nil
	}
	r.Retained = nil
	if err := writeRotation(rp, r); err != nil {
		return 0, err
	}
	if m := w.rotations.m.Load(); m != nil {
		if rk, ok := (*m)[a.ID]; ok {
			w.rotations.set(a.ID, &rotatedKey{idGen: rk.idGen, key: rk.key})
		}
	}
	a.retained = nil
	w.docs.Remove(a.ID)
	return retired, nil
}

func writeRotation(path string, r rotation) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// keyLog is the logger a's key entry reports an unusable file to.
func (w *World) keyLog(a *Actor) *zap.Logger {
	if a.key != nil && a.key.log != nil {
		return a.key.log
	}
	if w.Config.Logger != nil {
		return w.Config.Logger
	}
	return zap.NewNop()
}

// RetainedKeys are a's earlier public keys still served (newest first).
func (a *Actor) RetainedKeys() []PublicKeyDoc { return a.retained }
