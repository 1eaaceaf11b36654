package inbox

import (
	"container/heap"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
)

// ErrQueueFull marks a delivery refused because the queue holds its
// maximum of pending deliveries; the inbox answers the Follow that needed
// it with 503 and Retry-After, so the sender tries again later.
var ErrQueueFull = errors.New("delivery queue full")

// ErrBadDelivery marks a Delivery that cannot be queued (no sender, no
// activity, no target, or an id that is not a hex string).
var ErrBadDelivery = errors.New("bad delivery")

// queue is the persistent, bounded set of pending deliveries, ordered by
// due time. It does not send anything: the Inbox's workers do.
type queue struct {
	dir string
	max int
	log *zap.Logger

	mu      sync.Mutex
	pending map[string]*Delivery // every delivery not yet finished, in flight or not
	due     dheap                // those not in flight, earliest first
	wake    chan struct{}        // a token: some delivery may have become due
}

// openQueue loads every pending delivery from dir (creating it). A file
// that cannot be read is moved aside (".bad") rather than blocking start.
// Loaded deliveries are due at once: a restart is a natural moment to try
// again, and the attempts already made still count towards the limit.
func openQueue(dir string, max int, now time.Time, log *zap.Logger) (*queue, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("delivery queue: %w", err)
	}
	q := &queue{dir: dir, max: max, log: log, pending: map[string]*Delivery{}, wake: make(chan struct{}, 1)}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("delivery queue: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		path := filepath.Join(dir, name)
		if strings.HasPrefix(name, ".tmp-") {
			os.Remove(path) // a write torn by a crash; its Enqueue never returned
			continue
		}
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		d, err := readDelivery(path)
		if err != nil {
			log.Warn("delivery queue: unreadable file moved aside", zap.String("file", path), zap.Error(err))
			os.Rename(path, path+".bad")
			continue
		}
		if d.NextAt.After(now) {
			d.NextAt = now
		}
		q.pending[d.ID] = d
		heap.Push(&q.due, d)
	}
	return q, nil
}

func readDelivery(path string) (*Delivery, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := &Delivery{}
	if err := json.Unmarshal(b, d); err != nil {
		return nil, err
	}
	if d.ID+".json" != filepath.Base(path) || validDelivery(d) != nil {
		return nil, fmt.Errorf("%w: file does not hold a valid delivery", ErrBadDelivery)
	}
	return d, nil
}

func validDelivery(d *Delivery) error {
	if _, err := hex.DecodeString(d.ID); err != nil || d.ID == "" || len(d.ID) > 128 {
		return fmt.Errorf("%w: id %q is not a hex string", ErrBadDelivery, d.ID)
	}
	if d.From == "" || len(d.Activity) == 0 || (d.To == "" && d.Inbox == "") {
		return fmt.Errorf("%w: it needs From, Activity and To or Inbox", ErrBadDelivery)
	}
	return nil
}

func (q *queue) path(id string) string { return filepath.Join(q.dir, id+".json") }

// add makes d durable and schedules it. It reports false (and no error)
// when a delivery with the same ID is already pending.
func (q *queue) add(d *Delivery) (bool, error) {
	if err := validDelivery(d); err != nil {
		return false, err
	}
	q.mu.Lock()
	if _, ok := q.pending[d.ID]; ok {
		q.mu.Unlock()
		return false, nil
	}
	if len(q.pending) >= q.max {
		q.mu.Unlock()
		return false, fmt.Errorf("%w: %d deliveries pending", ErrQueueFull, q.max)
	}
	q.pending[d.ID] = d // reserved: a concurrent add of the same ID backs off
	b, err := json.Marshal(d)
	q.mu.Unlock()
	if err == nil {
		err = q.write(d.ID, b)
	}
	if err != nil {
		q.mu.Lock()
		delete(q.pending, d.ID)
		q.mu.Unlock()
		return false, err
	}
	q.push(d)
	return true, nil
}

// has reports whether a delivery with this id is pending.
func (q *queue) has(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.pending[id]
	return ok
}

func (q *queue) write(id string, b []byte) error {
	if err := atomicfile.Write(q.path(id), b, 0o600); err != nil {
		return fmt.Errorf("delivery queue: persist %s: %w", id, err)
	}
	return nil
}

// push makes d (pending, not in flight) available to the workers.
func (q *queue) push(d *Delivery) {
	q.mu.Lock()
	heap.Push(&q.due, d)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// next takes the earliest delivery due at now, or says how long until one
// is due (0: nothing pending).
func (q *queue) next(now time.Time) (*Delivery, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.due) == 0 {
		return nil, 0
	}
	d := q.due[0]
	if wait := d.NextAt.Sub(now); wait > 0 {
		return nil, wait
	}
	heap.Pop(&q.due)
	if len(q.due) > 0 && !q.due[0].NextAt.After(now) {
		q.signal() // more is due: hand the token to another idle worker
	}
	return d, 0
}

// retry changes the in-flight d with update (under the queue's lock, so
// list sees a consistent copy), persists it and schedules it again.
func (q *queue) retry(d *Delivery, update func(*Delivery)) error {
	q.mu.Lock()
	update(d)
	b, err := json.Marshal(d)
	q.mu.Unlock()
	if err == nil {
		err = q.write(d.ID, b)
	}
	q.push(d)
	return err
}

// requeue puts an in-flight d back untouched (the worker is stopping).
func (q *queue) requeue(d *Delivery) { q.push(d) }

// finish forgets d: delivered or given up.
func (q *queue) finish(d *Delivery) error {
	q.mu.Lock()
	delete(q.pending, d.ID)
	q.mu.Unlock()
	if err := os.Remove(q.path(d.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("delivery queue: remove %s: %w", d.ID, err)
	}
	return nil
}

func (q *queue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// list copies the pending deliveries, earliest due first.
func (q *queue) list() []Delivery {
	q.mu.Lock()
	out := make([]Delivery, 0, len(q.pending))
	for _, d := range q.pending {
		c := *d
		out = append(out, c)
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].NextAt.Before(out[j].NextAt) })
	return out
}

// dheap is a min-heap of deliveries by NextAt.
type dheap []*Delivery

func (h dheap) Len() int           { return len(h) }
func (h dheap) Less(i, j int) bool { return h[i].NextAt.Before(h[j].NextAt) }
func (h dheap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dheap) Push(x any)        { *h = append(*h, x.(*Delivery)) }
func (h *dheap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return d
}
