package doccheck

import (
	"strings"
)

// RunnableInfo is the info string that marks a fenced block as runnable: its commands run,
// one by one, in the e2e tests against the test SUT, so a command shown in the docs cannot rot.
const RunnableInfo = "sh runnable"

// Block is a runnable fenced block: the line of its opening fence and its commands.
type Block struct {
	Line     int
	Commands []Command
}

// Command is one shell command of a block: its first line's number and its text, lines
// continued with a trailing backslash joined into one.
type Command struct {
	Line int
	Text string
}

// RunnableBlocks are the page's fenced blocks whose info string is RunnableInfo, each with
// its commands; comment lines and blank lines are no commands.
func RunnableBlocks(page string) []Block {
	var blocks []Block
	var cur *Block
	var pending *Command // a command continued on the next line
	for i, line := range strings.Split(page, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil:
			if strings.HasPrefix(trimmed, "```") && strings.TrimSpace(strings.TrimLeft(trimmed, "`")) == RunnableInfo {
				cur = &Block{Line: i + 1}
			}
			continue
		case strings.HasPrefix(trimmed, "```"):
			if pending != nil {
				cur.Commands = append(cur.Commands, *pending)
				pending = nil
			}
			blocks = append(blocks, *cur)
			cur = nil
			continue
		case pending == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")):
			continue
		}
		text, continued := strings.CutSuffix(trimmed, `\`)
		if pending == nil {
			pending = &Command{Line: i + 1}
		} else {
			pending.Text += " "
		}
		pending.Text += strings.TrimSpace(text)
		if !continued {
			cur.Commands = append(cur.Commands, *pending)
			pending = nil
		}
	}
	return blocks
}
