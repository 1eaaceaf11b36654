package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
)

// ErrNotRecord is wrapped by DecodeRecord's error for input that is no
// crowd record at all (empty, not JSON, another JSON document, a results
// file), as opposed to a record this crowd cannot read. Its words say
// "crowd record", not "run record": a crowd run record is one with a run
// section, and this is about the flood's record around any.
var ErrNotRecord = errors.New("not a crowd record")

// resultsSchema is results.Schema (crowd flood --results), which imports
// this package: its first line decodes as a JSON object of that schema.
const resultsSchema = "crowd.flood.results"

// DecodeRecord reads one JSON record and checks its schema and version.
// Its errors say what the input is in plain words, never in Go's types: no
// crowd record at all wraps ErrNotRecord.
func DecodeRecord(rd io.Reader) (*Record, error) {
	var raw json.RawMessage
	if err := json.NewDecoder(rd).Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w (%s)", ErrNotRecord, JSONProblem(err, "a flood record"))
	}
	// The two fields alone, whatever their JSON type: a merged record is
	// large, and decoding it whole into a map only to read them costs.
	var head struct {
		Schema  any `json:"schema"`
		Version any `json:"version"`
	}
	if t := strings.TrimSpace(string(raw)); !strings.HasPrefix(t, "{") || json.Unmarshal(raw, &head) != nil {
		return nil, fmt.Errorf("%w (it holds a JSON %s, not an object)", ErrNotRecord, jsonKind(raw))
	}
	schema, isString := head.Schema.(string)
	switch {
	case schema == resultsSchema:
		return nil, fmt.Errorf("%w (a results file of crowd flood --results: crowd report renders it, crowd results csv converts it)", ErrNotRecord)
	case head.Schema == nil:
		return nil, fmt.Errorf("%w (it has no \"schema\"; a flood record's schema is %q)", ErrNotRecord, RecordSchema)
	case !isString:
		return nil, fmt.Errorf("%w (its \"schema\" is no string; a flood record's schema is %q)", ErrNotRecord, RecordSchema)
	case schema != RecordSchema:
		return nil, fmt.Errorf("%w (its schema is %q; a flood record's is %q)", ErrNotRecord, short(schema), RecordSchema)
	}
	// A version this crowd does not know may have fields it cannot decode:
	// say which version before decoding the rest.
	switch v, ok := head.Version.(float64); {
	case head.Version == nil:
		return nil, errors.New("a damaged flood record (it has no \"version\")")
	case !ok || v != float64(int(v)) || v < 1 || v > RecordVersion:
		return nil, fmt.Errorf("a flood record of version %s: this crowd reads 1 to %d", short(fmt.Sprint(head.Version)), RecordVersion)
	}
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("a damaged flood record (%s)", JSONProblem(err, "a flood record"))
	}
	if r.Types == nil {
		r.Types = map[string]*TypeRecord{}
	}
	return &r, nil
}

// LoadRecord reads the record in file path; its errors name the file.
func LoadRecord(path string) (*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := DecodeRecord(f)
	if errors.Is(err, ErrNotRecord) {
		return nil, fmt.Errorf("%s is %w", path, err)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// JSONProblem says in a few plain words, never in Go's types, what
// encoding/json found wrong decoding what (its words: "a flood record", "a
// run section"): "its "visibility" is a JSON string where a run section has
// an object". A record's readers use it so that a damaged file is said the
// way DecodeRecord says it.
func JSONProblem(err error, what string) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "it is empty"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "its JSON ends early"
	case errors.As(err, &syn):
		return fmt.Sprintf("not JSON at byte %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Sprintf("a JSON %s where %s has %s", typ.Value, what, kindWord(typ.Type))
		}
		return fmt.Sprintf("its %q is a JSON %s where %s has %s", typ.Field, typ.Value, what, kindWord(typ.Type))
	}
	return err.Error()
}

// kindWord is what JSON value a Go type takes, in JSON's words.
func kindWord(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map, reflect.Pointer:
		return "an object"
	}
	return "another kind of value"
}

// jsonKind names the kind of a JSON value by its first byte.
func jsonKind(raw json.RawMessage) string {
	switch s := strings.TrimSpace(string(raw)); {
	case strings.HasPrefix(s, "["):
		return "list"
	case strings.HasPrefix(s, `"`):
		return "string"
	case s == "null":
		return "null"
	case s == "true" || s == "false":
		return "boolean"
	}
	return "number"
}

// short is s cut to a length an error line holds.
func short(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
