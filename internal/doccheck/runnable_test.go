package doccheck

import (
	"reflect"
	"strings"
	"testing"
)

func TestRunnableBlocks(t *testing.T) {
	page := strings.Join([]string{
		"```sh",                        // 1: a plain block is not run
		"crowd serve",                  // 2
		"```",                          // 3
		"```sh runnable",               // 4
		"# a comment is no command",    // 5
		"crowd weather show",           // 6
		"",                             // 7
		"crowd flood --rate 5 \\",      // 8: continued
		"  --seconds 2   # short",      // 9
		"```",                          // 10
		"text",                         // 11
		"  ```sh runnable",             // 12: indented fences count
		"crowd lookup acct:a@sut.test", // 13
		"  ```",                        // 14
	}, "\n")
	want := []Block{
		{Line: 4, Commands: []Command{
			{Line: 6, Text: "crowd weather show"},                         // a command of one line
			{Line: 8, Text: "crowd flood --rate 5 --seconds 2   # short"}, // two lines joined, the comment kept for the shell
		}},
		{Line: 12, Commands: []Command{{Line: 13, Text: "crowd lookup acct:a@sut.test"}}},
	}
	if got := RunnableBlocks(page); !reflect.DeepEqual(got, want) {
		t.Errorf("RunnableBlocks = %+v\nwant %+v", got, want)
	}
}
