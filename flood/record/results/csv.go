package results

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ErrCut is wrapped by WriteCSV's error for a results file that ends
// before a run of it did; every row it held was written.
var ErrCut = errors.New("the results file ends before the run did")

// WriteCSV converts the send lines of a results file to CSV: a header of
// the send line's field names (SCHEMA.md), then a row per send; null is an
// empty cell, a time RFC 3339 with nanoseconds. The run and end lines are
// left out (the run column says which run a send belongs to). Every row
// is written all the same when a run has no end line (the file was cut
// short: a killed flood), and the error then wraps ErrCut.
func WriteCSV(dst io.Writer, src io.Reader) error {
	cw := csv.NewWriter(dst)
	typ := reflect.TypeFor[SendLine]()
	header := make([]string, typ.NumField())
	for i := range header {
		header[i], _, _ = strings.Cut(typ.Field(i).Tag.Get("json"), ",")
	}
	if err := cw.Write(header); err != nil {
		return err
	}
	row := make([]string, len(header))
	open := 0 // runs begun and not ended
	err := Each(src, func(kind string, b []byte) error {
		switch kind {
		case LineRun:
			open++
			return nil
		case LineEnd:
			open--
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
	if err != nil {
		return err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	if open > 0 {
		return fmt.Errorf("%w: a run has no end line, so its sends may not all be here", ErrCut)
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
