package loadrun

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/crowdfed/crowd/actors"
	"github.com/crowdfed/crowd/adminapi"
	"github.com/crowdfed/crowd/flood/record"
	"github.com/crowdfed/crowd/flood/traffic"
)

// VocabOptions are the flags of the vocabulary beyond Create, Like and
// Follow (see traffic.VocabConfig); the zero value is the default.
type VocabOptions struct {
	// ReplyDepth is --reply-depth: how deep a reply sits in its thread.
	ReplyDepth int
	// Mentions is --mentions: more personas each note mentions.
	Mentions int
	// Hashtags is --hashtags: hashtags on each note.
	Hashtags int
	// MediaCount and MediaSize are --media-count and --media-size (WxH):
	// the images a media note carries ("" and 0: one of 320x240).
	MediaCount int
	MediaSize  string
}

// config reads o into the generator's VocabConfig, checked.
func (o VocabOptions) config() (traffic.VocabConfig, error) {
	c := traffic.VocabConfig{ReplyDepth: o.ReplyDepth, Mentions: o.Mentions, Hashtags: o.Hashtags}
	if o.MediaCount != 0 || o.MediaSize != "" {
		c.Media = actors.MediaSpec{Count: max(o.MediaCount, 1), Width: 320, Height: 240}
		if o.MediaSize != "" {
			w, h, err := traffic.ParseMediaSize(o.MediaSize)
			if err != nil {
				return c, err
			}
			c.Media.Width, c.Media.Height = w, h
		}
		if o.MediaCount < 0 {
			c.Media.Count = o.MediaCount // refused by the generator's check, naming the flag
		}
	}
	return traffic.CheckVocab(c)
}

// vocabSinks are where the vocabulary's effects on the crowd go: the
// edits and deletions, and the Follows undone.
type vocabSinks struct {
	changes   traffic.ChangeSink
	unfollow  func(context.Context, traffic.FollowRegistration) error
	reactions traffic.ReactionSink // the Likes and Announces sent, and their Undos
}

// worldVocab is the sinks of a world in this process.
func worldVocab(w *actors.World) vocabSinks {
	return vocabSinks{changes: traffic.WorldChanges(w), reactions: traffic.WorldReactions(w), unfollow: func(_ context.Context, f traffic.FollowRegistration) error {
		if r, ok := w.Graph.FollowingByRemote(f.Local, f.Remote); ok && r.FollowID == f.FollowID {
			_, err := w.Graph.RemoveFollowing(f.Local, f.Remote)
			return err
		}
		return nil
	}}
}

// vocabRun is a run's feeds of the vocabulary's effects.
type vocabRun struct {
	changes   *traffic.ChangeFeed
	deletions *traffic.Deletions
	unfollow  *traffic.Registrar
	reactions *traffic.ReactionFeed
}

// startVocab starts the feeds of env's sinks.
func (r *runner) startVocab() {
	s := r.env.vocab
	r.vocab = &vocabRun{changes: traffic.NewChangeFeed(s.changes, traffic.OutboxFeedOptions{}),
		deletions: traffic.NewDeletions(s.changes, 10*time.Second),
		unfollow:  traffic.NewRegistrar(s.unfollow, traffic.RegistrarOptions{Workers: 1, Timeout: 10 * time.Second}),
		reactions: traffic.NewReactionFeed(s.reactions, traffic.OutboxFeedOptions{})}
}

// closeVocab sends the feeds' last batches and says what could not be
// recorded.
func (r *runner) closeVocab() {
	// Each feed its own bound: a slow crowd must not leave the next one,
	// the deletions' restorations among them, no time at all.
	var cancels []context.CancelFunc
	defer func() {
		for _, cancel := range cancels {
			cancel()
		}
	}()
	bound := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cancels = append(cancels, cancel)
		return ctx
	}
	if st := r.vocab.changes.Close(bound()); st.Failed > 0 {
		r.log.Warn("some edits could not be recorded by the crowd: those notes still answer as before their Update",
			zap.Int64("failed", st.Failed), zap.Int64("recorded", st.Fed), zap.String("first_error", st.FirstError))
	}
	if st := r.vocab.reactions.Close(bound()); st.Failed > 0 {
		r.log.Warn("some Likes and Announces sent could not be kept by the crowd: a later run may send them again",
			zap.Int64("failed", st.Failed), zap.Int64("kept", st.Fed), zap.String("first_error", st.FirstError))
	}
	// After the sources closed (deferred later), so the Deletes they drafted
	// and never sent are restored.
	if st := r.vocab.deletions.Close(bound()); st.Failed > 0 {
		r.log.Warn("some deletions could not be recorded (or restored) by the crowd: those objects answer as before their Delete",
			zap.Int64("failed", st.Failed), zap.Int64("marked", st.Marked), zap.Int64("restored", st.Restored), zap.String("first_error", st.FirstError))
	} else if st.Marked > 0 {
		r.log.Info("deleted in the crowd's state as their Deletes were drafted; those never sent were restored",
			zap.Int64("marked", st.Marked), zap.Int64("restored", st.Restored))
	}
	if st := r.vocab.unfollow.Close(bound()); st.Failed > 0 {
		r.log.Warn("some undone Follows could not be forgotten by the crowd's follow graph",
			zap.Int64("failed", st.Failed), zap.Int64("forgotten", st.Registered), zap.String("first_error", st.FirstError))
	}
}

// vocabConfig is the generator's VocabConfig: the plan's, with the
// undone Follows going to the run's feed.
func (r *runner) vocabConfig() traffic.VocabConfig {
	c := r.p.vocab
	c.OnUnfollow = r.vocab.unfollow.Add
	c.Deletions = r.vocab.deletions
	return c
}

// crowdReactions reads the reactions the crowd keeps through its admin API
// and answers whether crowd actor actor keeps one of kind to object, as
// they stood when read (the run's own are the generator's to track).
func crowdReactions(ctx context.Context, admin *adminapi.Client) (func(actor, object string, kind record.ActivityKind) bool, error) {
	info, err := admin.Reactions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the crowd's reactions: %w", err)
	}
	type key struct{ actor, object, kind string }
	kept := make(map[key]bool, len(info.Reactions))
	for _, x := range info.Reactions {
		kept[key{x.Actor, x.Object, x.Kind}] = true
	}
	return func(actor, object string, kind record.ActivityKind) bool {
		return kept[key{actor, object, string(kind)}]
	}, nil
}
