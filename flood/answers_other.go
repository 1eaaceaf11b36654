//go:build !linux

package flood

import "time"

// answerLoop is Linux's (epoll): elsewhere every answer is a worker's.
type answerLoop struct{}

// watchers is Linux's: no loop watches a socket elsewhere.
type watchers struct{}

func newAnswerLoop(*crew, int) *answerLoop               { return nil }
func (*answerLoop) close(*crew)                          {}
func (*answerLoop) busy() bool                           { return false }
func (*answerLoop) quiet() bool                          { return false }
func (*answerLoop) wakeForEach()                         {}
func (*answerLoop) deadlineBy(*crew, time.Duration) bool { return false }
func (*answerLoop) awaiting() int                        { return 0 }
func (*answerLoop) take(*crew, *job) bool                { return false }
func (*answerLoop) wait(*crew, time.Duration)            {}
func (*answerLoop) leaveAll(*crew)                       {}
func (*answerLoop) finish(*crew)                         {}
