package actors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
	"sync"
)

// ParseMediaPath reads a MediaURL's path (/media/{W}x{H}/{seed}.png) back
// into the image's size and seed; it fails with ErrNoObject for a path
// MediaURL cannot make.
func ParseMediaPath(path string) (w, h int, seed string, err error) {
	bad := fmt.Errorf("%w: want /media/{W}x{H}/{seed}.png, W and H from 1 to %d", ErrNoObject, MaxMediaSide)
	rest, ok1 := strings.CutPrefix(path, "/media/")
	size, file, ok2 := strings.Cut(rest, "/")
	ws, hs, ok3 := strings.Cut(size, "x")
	seed, ok4 := strings.CutSuffix(file, ".png")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	// One image, one URL: the numbers as MediaURL writes them (no sign, no leading zero).
	canonical := strconv.Itoa(w) == ws && strconv.Itoa(h) == hs
	if !ok1 || !ok2 || !ok3 || !ok4 || err1 != nil || err2 != nil || !canonical || w < 1 || h < 1 || w > MaxMediaSide || h > MaxMediaSide ||
		seed == "" || len(seed) > 64 || strings.Trim(seed, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
		return 0, 0, "", bad
	}
	return w, h, seed, nil
}

// gradientPNG is the PNG of a w×h gradient in two colours drawn from the
// size.
func gradientPNG(w, h int) ([]byte, error) {
	if w < 1 || h < 1 || w > MaxMediaSide || h > MaxMediaSide {
		return nil, fmt.Errorf("image size %dx%d out of range", w, h)
	}
	f := fnv.New64a()
	fmt.Fprintf(f, "%dx%d", w, h)
	s := f.Sum64()
	c0 := [3]int{int(s & 0xff), int(s >> 8 & 0xff), int(s >> 16 & 0xff)}
	c1 := [3]int{int(s >> 24 & 0xff), int(s >> 32 & 0xff), int(s >> 40 & 0xff)}
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	span := max(1, w+h-2)
	for y := range h {
		for x := range w {
			t := x + y
			mix := func(i int) uint8 { return uint8((c0[i]*(span-t) + c1[i]*t) / span) }
			img.SetNRGBA(x, y, color.NRGBA{R: mix(0), G: mix(1), B: mix(2), A: 255})
		}
	}
	var b bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(&b, img); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// pngHeader is the signature and the IHDR chunk every PNG starts with:
// 8 + 4 + 4 + 13 + 4 bytes.
const pngHeader = 33

// withSeed is base with a tEXt chunk "crowd" = seed after its header.
func withSeed(base []byte, seed string) []byte {
	data := append([]byte("crowd\x00"), seed...)
	chunk := make([]byte, 0, 12+len(data))
	chunk = binary.BigEndian.AppendUint32(chunk, uint32(len(data)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, data...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := make([]byte, 0, len(base)+len(chunk))
	out = append(out, base[:pngHeader]...)
	out = append(out, chunk...)
	return append(out, base[pngHeader:]...)
}

// Images makes the crowd's images, keeping the pixels (the encoded
// gradient) of the latest sizes asked: encoding is what costs (2.6 ms for
// 320×240, 100 ms for 2048×1536 here), and a flood's images share a size.
// Safe for concurrent use.
type Images struct {
	mu    sync.Mutex
	keep  int
	bases map[[2]int][]byte
	order [][2]int // oldest first
}

// NewImages keeps the pixels of up to keep sizes (at least 1).
func NewImages(keep int) *Images {
	return &Images{keep: max(1, keep), bases: map[[2]int][]byte{}}
}

// PNG is the image of w×h pixels the seed names, the same bytes every
// time (a SUT that downloads it twice, or a cache, sees one image): a
// gradient drawn from the size, and the seed in a text chunk, so every URL
// has bytes of its own. w and h must be within MaxMediaSide. The pixels of
// a size kept make it a copy.
func (im *Images) PNG(w, h int, seed string) ([]byte, error) {
	key := [2]int{w, h}
	im.mu.Lock()
	base, ok := im.bases[key]
	im.mu.Unlock()
	if !ok {
		var err error
		if base, err = gradientPNG(w, h); err != nil {
			return nil, err
		}
		im.mu.Lock()
		if _, ok := im.bases[key]; !ok {
			if len(im.order) >= im.keep {
				delete(im.bases, im.order[0])
				im.order = im.order[1:]
			}
			im.bases[key] = base
			im.order = append(im.order, key)
		}
		im.mu.Unlock()
	}
	return withSeed(base, seed), nil
}
