package main

import (
	"bytes"
	"encoding/json"
	"io"
)

// indentedJSONText indents a JSON document for people; what is not JSON is
// returned as it is.
func indentedJSONText(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSpace(raw), "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// printIndentedJSON writes v indented, HTML left readable (--json outputs).
func printIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
