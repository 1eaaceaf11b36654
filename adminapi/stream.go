package adminapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ReadStream decodes the Server-Sent Events of RouteStream and calls fn for
// each activity, with Lost set to the entries the server dropped for this
// reader just before it. It returns nil when r ends, fn's error when fn
// fails, or an error wrapping ErrBadAnswer when an activity event does not
// hold an Entry. Comments (keep-alive pings) and unknown events are skipped.
func ReadStream(r io.Reader, fn func(Event) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var event string
	var data strings.Builder
	var lost uint64
	dispatch := func() error {
		defer func() { event = ""; data.Reset() }()
		switch event {
		case "lost":
			var l struct {
				Lost uint64 `json:"lost"`
			}
			if json.Unmarshal([]byte(data.String()), &l) == nil {
				lost += l.Lost
			}
		case "activity", "":
			if data.Len() == 0 {
				return nil
			}
			var e Entry
			if err := json.Unmarshal([]byte(data.String()), &e); err != nil {
				return fmt.Errorf("%w: stream event is not an activity log entry: %v", ErrBadAnswer, err)
			}
			ev := Event{Entry: e, Lost: lost}
			lost = 0
			return fn(ev)
		}
		return nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if err := dispatch(); err != nil {
				return err
			}
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				event = value
			case "data":
				if data.Len() > 0 {
					data.WriteByte('\n')
				}
				data.WriteString(value)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return dispatch()
}

// Stream is an open RouteStream: Read it, then Close it.
type Stream struct {
	body io.ReadCloser
}

// Read calls fn for each event until the server ends the stream (nil: the
// crowd is shutting down), fn fails (its error), the request's context ends
// or the connection breaks (the read error), or an event is not an Entry
// (ErrBadAnswer).
func (s *Stream) Read(fn func(Event) error) error { return ReadStream(s.body, fn) }

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }
