package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/inbox"
	"github.com/crowdfed/crowd/signing"
)

// startInbox serves the crowd's inbox over world (verifying with the
// world's backend) on a loopback listener, its state in a fresh folder
// named name under the scratch directory; stop shuts it down.
func (b *bench) startInbox(world *actors.World, name string) (addr string, stop func(), err error) {
	dir := filepath.Join(b.tmp, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	in, err := inbox.New(inbox.Config{World: world, StateDir: dir, Logger: zap.NewNop(), Registerer: prometheus.NewRegistry()})
	if err != nil {
		return "", nil, err
	}
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in.Shutdown(sctx)
	}
	addr, stopIn, err := serve(sharedInbox(world, in))
	if err != nil {
		shutdown()
		return "", nil, err
	}
	return addr, func() { stopIn(); shutdown() }, nil
}

// sharedInbox hands each request to the shared inbox of the origin its Host names, as the
// crowd's origin router does before the inbox (the bench's pool posts only there), so the row
// keeps the cost of that one Host lookup.
func sharedInbox(world *actors.World, in http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o, _ := world.Origin(r.Host)
		in.ServeHTTP(w, r.WithContext(inbox.WithRecipient(r.Context(), inbox.Recipient{Origin: o})))
	})
}

// startBareVerifier serves the bare handler the inbox is compared with: it
// reads the body and runs signing.Verifier with backend, the world's keys
// held in a map.
func startBareVerifier(world *actors.World, backend signing.Backend) (addr string, stop func(), err error) {
	keys := map[string]signing.PublicKey{}
	for _, o := range world.Origins {
		for _, a := range o.Persons() {
			keys[a.KeyID] = signing.PublicKey{Key: a.Key.Public(), Owner: a.ID, ID: a.KeyID}
		}
		keys[o.Instance.KeyID] = signing.PublicKey{Key: o.Instance.Key.Public(), Owner: o.Instance.ID, ID: o.Instance.KeyID}
	}
	verifier := &signing.Verifier{Keys: signing.KeyResolverFunc(func(_ context.Context, keyID string, _ bool) (signing.PublicKey, error) {
		if k, ok := keys[keyID]; ok {
			return k, nil
		}
		return signing.PublicKey{}, fmt.Errorf("%w: %s", signing.ErrKeyUnavailable, keyID)
	}), Backend: backend}
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if _, err := verifier.Verify(r.Context(), r, body); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	return serve(bare)
}
