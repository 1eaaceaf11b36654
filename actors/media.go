package actors

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"image/png"
	"strconv"
	"strings"
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

// GenerateImage is the PNG of w×h pixels the seed names: a gradient in
// two colours drawn from the seed, the same bytes every time (a SUT that
// downloads it twice, or a cache, sees one image). w and h must be within
// MaxMediaSide.
func GenerateImage(w, h int, seed string) ([]byte, error) {
	if w < 1 || h < 1 || w > MaxMediaSide || h > MaxMediaSide {
		return nil, fmt.Errorf("image size %dx%d out of range", w, h)
	}
	f := fnv.New64a()
	f.Write([]byte(seed))
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
