package epoll

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pair is a connected pair of real sockets: bytes written to one end
// arrive on the other.
func pair(t *testing.T) (near, far int) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds[0], fds[1]
}

func open(t *testing.T, batch int) *Set {
	t.Helper()
	s, err := Open(batch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func send(t *testing.T, fd int, b string) {
	t.Helper()
	if _, err := unix.Write(fd, []byte(b)); err != nil {
		t.Fatal(err)
	}
}

// readyFDs is the descriptors a wait of d reported readable.
func readyFDs(t *testing.T, s *Set, d time.Duration) map[int]bool {
	t.Helper()
	evs, err := s.Wait(d)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, ev := range evs {
		if ev.Events&unix.EPOLLIN != 0 {
			got[int(ev.Fd)] = true
		}
	}
	return got
}

// What a wait reports, on real sockets.
func TestWaitReports(t *testing.T) {
	for _, tc := range []struct {
		name string
		// act watches and writes on three socket pairs (their near ends
		// watched, their far ends written) and returns the near ends a
		// wait of 50 ms must report readable, in the order of its waits.
		act func(t *testing.T, s *Set, near, far [3]int) [][]int
	}{
		// Bytes on a watched socket wake the wait, and only that socket.
		{name: "one ready", act: func(t *testing.T, s *Set, near, far [3]int) [][]int {
			watch(t, s, near[:], unix.EPOLLIN)
			send(t, far[1], "x")
			return [][]int{{near[1]}}
		}},
		// Edge-triggered: bytes left unread are not reported again until
		// more come.
		{name: "edge once", act: func(t *testing.T, s *Set, near, far [3]int) [][]int {
			watch(t, s, near[:1], unix.EPOLLIN|unix.EPOLLET)
			send(t, far[0], "x")
			return [][]int{{near[0]}, {}}
		}},
		// Level-triggered: bytes left unread are reported at every wait.
		{name: "level again", act: func(t *testing.T, s *Set, near, far [3]int) [][]int {
			watch(t, s, near[:1], unix.EPOLLIN)
			send(t, far[0], "x")
			return [][]int{{near[0]}, {near[0]}}
		}},
		// Watching again replaces the events: a socket now watched for
		// nothing readable is not reported.
		{name: "watch again", act: func(t *testing.T, s *Set, near, far [3]int) [][]int {
			watch(t, s, near[:1], unix.EPOLLIN)
			watch(t, s, near[:1], unix.EPOLLRDHUP)
			send(t, far[0], "x")
			return [][]int{{}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, 8)
			var near, far [3]int
			for k := range near {
				near[k], far[k] = pair(t)
			}
			for k, fds := range tc.act(t, s, near, far) {
				got := readyFDs(t, s, 50*time.Millisecond)
				if len(got) != len(fds) {
					t.Fatalf("wait %d reported %v; want %v", k, got, fds)
				}
				for _, fd := range fds {
					if !got[fd] {
						t.Fatalf("wait %d reported %v; want %v", k, got, fds)
					}
				}
			}
		})
	}
}

// A wait takes no more events than its batch; the rest wait for the next.
func TestWaitBatch(t *testing.T) {
	s := open(t, 2)
	var near [3]int
	for k := range near {
		var far int
		near[k], far = pair(t)
		watch(t, s, near[k:k+1], unix.EPOLLIN|unix.EPOLLET)
		send(t, far, "x")
	}
	first, second := readyFDs(t, s, 50*time.Millisecond), readyFDs(t, s, 50*time.Millisecond)
	for _, fd := range near {
		if first[fd] == second[fd] {
			t.Errorf("descriptor %d: in the first wait %v, in the second %v; want it in one", fd, first[fd], second[fd])
		}
	}
	if len(first) != 2 {
		t.Errorf("the first wait reported %d descriptors; want its batch, 2", len(first))
	}
}

func watch(t *testing.T, s *Set, fds []int, events uint32) {
	t.Helper()
	for _, fd := range fds {
		if err := s.Watch(fd, events); err != nil {
			t.Fatal(err)
		}
	}
}

// A wait with nothing ready lasts at least its timeout, and one of no
// time returns at once; a fine Set keeps a timeout under a millisecond.
func TestWaitTimeout(t *testing.T) {
	s := open(t, 4)
	near, _ := pair(t)
	watch(t, s, []int{near}, unix.EPOLLIN)
	for _, d := range []time.Duration{0, -time.Second, 300 * time.Microsecond, 5 * time.Millisecond} {
		began := time.Now()
		evs, err := s.Wait(d)
		took := time.Since(began)
		if err != nil || len(evs) != 0 {
			t.Fatalf("Wait(%v) = %v, %v; want nothing", d, evs, err)
		}
		if took < d {
			t.Errorf("Wait(%v) returned after %v", d, took)
		}
	}
	if !s.Fine() {
		t.Log("this kernel has no epoll_pwait2: waits round up to a millisecond")
	}
}

// A closed descriptor leaves the Set: its far end's bytes wake nothing.
func TestClosedLeaves(t *testing.T) {
	s := open(t, 4)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[1])
	watch(t, s, fds[:1], unix.EPOLLIN)
	unix.Close(fds[0])
	_, _ = unix.Write(fds[1], []byte("x")) // EPIPE or not: nothing may be reported
	if got := readyFDs(t, s, 20*time.Millisecond); len(got) != 0 {
		t.Fatalf("a closed descriptor was reported: %v", got)
	}
}
