// Key rotation (`crowd keys rotate`): an actor gets a new key under a new
// key id, and its old public keys keep answering at their ids until
// retired.

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
	"os"
	"path/filepath"
	"strconv"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// rotation is an actor's key history, persisted beside its key
// (keys/<host>/<name>.rotation.json) once it was first rotated.
type rotation struct {
	// Generation is the current key's: 1 is the key the actor was made
	// with (keyId #main-key), n > 1 the n-th (keyId #main-key-n).
	Generation int `json:"generation"`
	// Current is the SHA-256 (hex) of the current public key's SPKI DER:
	// the key file must hold that key (see loadRotation).
	Current string `json:"current_sha256"`
	// Retained are the earlier public keys still served, newest first, in
	// the actor document's additionalPublicKeys (Misskey's list of extra
	// keys, which the crowd's verifier reads too): a SUT that verifies a
	// request signed before the rotation still finds the key at its id.
	Retained []PublicKeyDoc `json:"retained"`
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

// loadRotation applies a's persisted rotation, if any, after its key was
// loaded: its key id and retained keys. A rotation torn by a crash is
// finished or undone: the new key is written to <name>.pem.new first, the
// rotation file second, the key file last; so a rotation file that names
// the .new key finishes the move, and a .new key the rotation file does
// not name is dropped (that rotation never happened).
func (a *Actor) loadRotation(stateDir string, repair bool) error {
	kp, rp := keyPath(stateDir, a.Origin.Host, a.Name), rotationPath(stateDir, a.Origin.Host, a.Name)
	b, err := os.ReadFile(rp)
	if errors.Is(err, os.ErrNotExist) {
		if repair {
			os.Remove(kp + ".new")
		}
		return nil
	}
	if err != nil {
		return err
	}
	var r rotation
	if err := json.Unmarshal(b, &r); err != nil || r.Generation < 1 {
		return fmt.Errorf("%w: %s: not a key rotation (%v)", ErrKeyFile, rp, err)
	}
	cur, err := spkiSHA256(&a.Key.PublicKey)
	if err != nil {
		return err
	}
	if cur != r.Current {
		if !repair {
			return fmt.Errorf("%w: the key rotation of %s is unfinished: start the crowd (crowd serve) once to finish it", ErrKeyFile, a.Acct())
		}
		next, err := readKey(kp + ".new")
		if err != nil {
			return fmt.Errorf("%w: %s names a key that %s does not hold", ErrKeyFile, rp, kp)
		}
		if sum, _ := spkiSHA256(&next.PublicKey); sum != r.Current {
			return fmt.Errorf("%w: %s names a key that neither %s nor its .new holds", ErrKeyFile, rp, kp)
		}
		if err := os.Rename(kp+".new", kp); err != nil {
			return err
		}
		if err := a.setKey(next); err != nil {
			return err
		}
	}
	if repair {
		os.Remove(kp + ".new")
	}
	a.KeyID = keyIDOf(a.ID, r.Generation)
	a.retained = r.Retained
	return nil
}

// RotateKey gives a new key to a crowd actor of w's state directory: a
// fresh RSA key under the next key id (#main-key-2, -3 …), persisted
// before it returns; the old public key stays in the actor's document
// (additionalPublicKeys) unless retire, which also drops every key
// retained earlier. It changes a: call it only on a world that is not
// serving (`crowd keys rotate` on a stopped crowd), and re-render the
// document with RenderDocument.
func (w *World) RotateKey(a *Actor, retire bool) error {
	dir := w.Config.StateDir
	gen := 1
	if r, err := os.ReadFile(rotationPath(dir, a.Origin.Host, a.Name)); err == nil {
		var old rotation
		if err := json.Unmarshal(r, &old); err != nil {
			return fmt.Errorf("%w: %v", ErrKeyFile, err)
		}
		gen = old.Generation
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
	if err := atomicfile.Write(kp+".new", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
	}
	sum, err := spkiSHA256(&key.PublicKey)
	if err != nil {
		return err
	}
	r := rotation{Generation: gen + 1, Current: sum}
	if !retire {
		r.Retained = append([]PublicKeyDoc{{ID: a.KeyID, Owner: a.ID, PublicKeyPem: a.PublicKeyPEM}}, a.retained...)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(rotationPath(dir, a.Origin.Host, a.Name), b, 0o600); err != nil {
		return fmt.Errorf("persist the key rotation of %s: %w", a.Acct(), err)
	}
	if err := os.Rename(kp+".new", kp); err != nil {
		return fmt.Errorf("persist key for %s: %w", a.Acct(), err)
	}
	if err := a.setKey(key); err != nil {
		return err
	}
	a.KeyID, a.retained = keyIDOf(a.ID, r.Generation), r.Retained
	return a.RenderDocument()
}

// RetireKeys stops serving a's earlier keys: requests signed with them
// are refused from now on. It changes a, as RotateKey does.
func (w *World) RetireKeys(a *Actor) error {
	rp := rotationPath(w.Config.StateDir, a.Origin.Host, a.Name)
	b, err := os.ReadFile(rp)
	if errors.Is(err, os.ErrNotExist) {
		return nil // never rotated: nothing retained
	}
	if err != nil {
		return err
	}
	var r rotation
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrKeyFile, rp, err)
	}
	r.Retained = nil
	if b, err = json.MarshalIndent(r, "", "  "); err != nil {
		return err
	}
	if err := atomicfile.Write(rp, b, 0o600); err != nil {
		return err
	}
	a.retained = nil
	return a.RenderDocument()
}

// RenderDocument renders a's document again (DocumentJSON), after a key
// rotation.
func (a *Actor) RenderDocument() error {
	doc, err := MarshalDoc(a.Document())
	if err != nil {
		return fmt.Errorf("render %s: %w", a.Acct(), err)
	}
	a.docJSON = doc
	return nil
}

// RetainedKeys are a's earlier public keys still served (newest first).
func (a *Actor) RetainedKeys() []PublicKeyDoc { return a.retained }
