package results

import (
	"bytes"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression is how a results file is compressed: chosen by its name
// when written, known by its first bytes when read.
type Compression int

// The compressions of a results file.
const (
	Plain Compression = iota // NDJSON as is
	Gzip                     // a name ending in .gz
	Zstd                     // a name ending in .zst
)

// CompressionOf is the compression a file named path takes, its ending
// matched in any case (X.NDJSON.GZ is gzip).
func CompressionOf(path string) Compression {
	switch path = strings.ToLower(path); {
	case strings.HasSuffix(path, ".gz"):
		return Gzip
	case strings.HasSuffix(path, ".zst"):
		return Zstd
	}
	return Plain
}

// The magic numbers a compressed stream starts with (RFC 1952; RFC 8878),
// constants: no package state.
const (
	gzipMagic = "\x1f\x8b"
	zstdMagic = "\x28\xb5\x2f\xfd"
)

// compressionIn is the compression a stream starting with head has: its
// magic number says, whatever the file is named. NDJSON starts with "{" or
// a blank, never with either.
func compressionIn(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, []byte(gzipMagic)):
		return Gzip
	case bytes.HasPrefix(head, []byte(zstdMagic)):
		return Zstd
	}
	return Plain
}

// flushCloser is a compressor: Flush ends what it holds as a block a
// reader can decompress, Close ends the stream.
type flushCloser interface {
	io.Writer
	Flush() error
	Close() error
}

// writer is a compressor writing to dst, nil for Plain. The fastest
// levels: results are written while the flood runs, beside it.
func (c Compression) writer(dst io.Writer) (flushCloser, error) {
	switch c {
	case Gzip:
		return gzip.NewWriterLevel(dst, gzip.BestSpeed)
	case Zstd:
		return zstd.NewWriter(dst, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	}
	return nil, nil
}

// reader decompresses src; its Close releases the decoder (never src).
func (c Compression) reader(src io.Reader) (io.ReadCloser, error) {
	switch c {
	case Gzip:
		return gzip.NewReader(src)
	case Zstd:
		d, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	}
	return io.NopCloser(src), nil
}
