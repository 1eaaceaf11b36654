package inbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/internal/atomicfile"
	"github.com/crowdfed/crowd/internal/journal"
)

// TotalsFile holds the log's totals as of an entry (a checkpoint), next to
// the log, so a restart counts only the entries written after it.
const TotalsFile = "activity.totals.json"

// checkpoint is TotalsFile's content: the totals of every entry up to Seq.
type checkpoint struct {
	Seq uint64 `json:"seq"`
	Totals
}

func writeCheckpoint(dir string, c checkpoint) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, TotalsFile), append(b, '\n'), 0o600)
}

// readCheckpoint reads TotalsFile; ok is false when there is none (a state
// from before totals were kept).
func readCheckpoint(dir string) (c checkpoint, ok bool, err error) {
	path := filepath.Join(dir, TotalsFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, false, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil {
		return c, false, fmt.Errorf("activity log: %s: %w (delete it to recount the totals from the log)", path, err)
	}
	return c, true, nil
}

// restored is what a log finds on disk when it opens.
type restored struct {
	latest []Entry // newest first, at most the ring's size
	seq    uint64  // the highest seq on disk: the next entry is seq+1
	totals Totals
}

// restore reads the log in dir back from its end, newest file first: the
// latest entries for the ring, the last seq, and the totals (the
// checkpoint's plus the entries after it; without a checkpoint, every
// entry is counted once). A torn last line of the current file is dropped
// and logged; any other entry that does not read stops the opening with
// its file and line, the files left as they were.
func restore(dir string, keep, ring int, log *zap.Logger) (restored, error) {
	var r restored
	current := filepath.Join(dir, LogFile)
	torn, err := journal.DropTornTail(current)
	if err != nil {
		return r, fmt.Errorf("activity log: %w", err)
	}
	if torn != nil {
		log.Warn("activity log: dropped the torn last line a crash left", zap.String("file", torn.Path),
			zap.Int("line", torn.Line), zap.Int64("bytes", torn.Bytes))
	}
	cp, haveCP, err := readCheckpoint(dir)
	if err != nil {
		return r, err
	}
	r.totals, r.seq = cp.Totals, cp.Seq
	files := []string{current}
	for i := 1; i <= keep; i++ {
		files = append(files, fmt.Sprintf("%s.%d", current, i))
	}
	// Seqs only rise within a checkpointed log, so reading back stops at
	// the checkpoint's seq once the ring is full.
	done := func(e *Entry) bool { return len(r.latest) >= ring && haveCP && e.Seq <= cp.Seq }
	for _, path := range files {
		var bad error
		var stop bool
		err := journal.Backward(path, func(off int64, line []byte) bool {
			var e Entry
			if err := json.Unmarshal(line, &e); err != nil {
				bad = damagedAt(path, off, fmt.Errorf("not a log entry: %v", err))
				return false
			}
			if stop = done(&e); stop {
				return false
			}
			if len(r.latest) < ring {
				r.latest = append(r.latest, e)
			}
			r.seq = max(r.seq, e.Seq)
			if !haveCP || e.Seq > cp.Seq {
				r.totals.Add(&e)
			}
			return true
		})
		if err == nil {
			err = bad
		}
		if err != nil {
			return r, err
		}
		if stop {
			break
		}
	}
	return r, nil
}

// damagedAt is journal.Damaged for the line starting at byte off of path.
func damagedAt(path string, off int64, why error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := journal.LineAt(f, off)
	if err != nil {
		return err
	}
	return fmt.Errorf("activity log: %w", journal.Damaged(path, n, why))
}
