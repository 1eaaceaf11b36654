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
// left out (the run column says which run a send belongs to).
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
	err := Each(src, func(kind string, b []byte) error {
		if kind != LineSend {
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
	return cw.Error()
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
