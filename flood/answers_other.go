//go:build !linux

package flood

import "time"

// answerLoop is Linux's (epoll): elsewhere every answer is a worker's.
type answerLoop struct{}

func newAnswerLoop(*crew) *answerLoop         { return nil }
func (*answerLoop) busy() bool                { return false }
func (*answerLoop) awaiting() int             { return 0 }
func (*answerLoop) take(*crew, *job) bool     { return false }
func (*answerLoop) wait(*crew, time.Duration) {}
func (*answerLoop) leaveAll(*crew)            {}
func (*answerLoop) finish(*crew)              {}
