package results

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// WriteCSV converts the send lines of a results file to CSV: a header of
// the send line's field names (SCHEMA.md), then a row per send; null is an
// empty cell, a time RFC 3339 with nanoseconds. The run and end lines are
// left out (the run column says which run a send belongs to). Nothing is
// written before the file's first run line has been read: a file that is
// no results file, or holds no run (ErrNoRun), gets no header of its own.
// A file cut short (a killed flood: a run without its end line, a last
// line not whole) gives a row for every whole send line all the same, and
// an error wrapping ErrCut.
func WriteCSV(dst io.Writer, src io.Reader) error {
	cw := csv.NewWriter(dst)
	typ := reflect.TypeFor[SendLine]()
	header := make([]string, typ.NumField())
	for i := range header {
		header[i], _, _ = strings.Cut(typ.Field(i).Tag.Get("json"), ",")
	}
	row := make([]string, len(header))
	runs, open, unended := 0, false, false // a run begun and not ended; one that never was
	err := Each(src, func(kind string, b []byte) error {
		switch kind {
		case LineRun:
			if runs++; runs == 1 {
				if err := cw.Write(header); err != nil {
					return err
				}
			}
			unended = unended || open
			open = true
			return nil
		case LineEnd:
			open = false
			return nil
		case LineSend:
		default:
			return nil
		}
		var l SendLine
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		v := reflect.ValueOf(l)
		for i := range row {
			row[i] = cell(v.Field(i))
		}
		return cw.Write(row)
	})
	cw.Flush() // the rows before a cut or a bad line are written all the same
	switch {
	case err != nil:
		return err
	case cw.Error() != nil:
		return cw.Error()
	case runs == 0:
		return ErrNoRun
	case open || unended:
		return fmt.Errorf("%w (a run has no end line)", ErrCut)
	}
	return nil
}

// cell is one field's CSV cell.
func cell(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if t, ok := v.Interface().(time.Time); ok {
		return t.Format(time.RFC3339Nano)
	}
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}
