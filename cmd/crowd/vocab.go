package main

import "github.com/spf13/cobra"

// vocabFlags are the flags of the vocabulary beyond Create, Like and
// Follow (loadrun.VocabOptions, field for field).
type vocabFlags struct {
	ReplyDepth int
	Mentions   int
	Hashtags   int
	MediaCount int
	MediaSize  string
}

func (v *vocabFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&v.ReplyDepth, "reply-depth", 1, "with reply in --mix: how deep each reply sits in its thread; the crowd notes above it (depth-1 of them) are ones the SUT never saw and must fetch (1 to 6)")
	fl.IntVar(&v.Mentions, "mentions", 0, "how many more personas each note (create, reply, media) mentions, beside the one it is sent to")
	fl.IntVar(&v.Hashtags, "hashtags", 0, "how many hashtags each note carries, each linking to the origin's /tags/NAME")
	fl.IntVar(&v.MediaCount, "media-count", 1, "with media in --mix: images per note (1 to 8), PNGs the crowd generates and serves")
	fl.StringVar(&v.MediaSize, "media-size", "320x240", "with media in --mix: the images' size, WxH (up to 2048x2048)")
}
