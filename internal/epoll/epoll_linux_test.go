package epoll

import (
	"errors"
	"slices"
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

// kinds runs f on a Set of each kind this kernel can make, batch events
// a wait: the fine one (epoll_pwait2) where the kernel has it, and the
// coarse one (epoll_wait) a kernel without it would give.
func kinds(t *testing.T, batch int, f func(t *testing.T, s *Set)) {
	for _, fine := range []bool{true, false} {
		name := map[bool]string{true: "fine", false: "coarse"}[fine]
		t.Run(name, func(t *testing.T) {
			s, err := Open(batch)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if fine && !s.Fine() {
				t.Skip("this kernel has no epoll_pwait2")
			}
			s.fine = fine
			f(t, s)
		})
	}
}

// send writes b on fd.
func send(t *testing.T, fd int, b string) {
	t.Helper()
	if _, err := unix.Write(fd, []byte(b)); err != nil {
		t.Fatal(err)
	}
}

// watch has s report events on each of fds.
func watch(t *testing.T, s *Set, fds []int, events uint32) {
	t.Helper()
	for _, fd := range fds {
		if err := s.Watch(fd, events); err != nil {
			t.Fatal(err)
		}
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
		// Unwatched, a socket is not reported, others still are.
		{name: "unwatched", act: func(t *testing.T, s *Set, near, far [3]int) [][]int {
			watch(t, s, near[:2], unix.EPOLLIN)
			if err := s.Unwatch(near[0]); err != nil {
				t.Fatal(err)
			}
			if err := s.Unwatch(near[0]); !errors.Is(err, unix.ENOENT) {
				t.Fatalf("a second Unwatch: %v, want ENOENT", err)
			}
			send(t, far[0], "x")
			send(t, far[1], "x")
			return [][]int{{near[1]}}
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
			kinds(t, 8, func(t *testing.T, s *Set) {
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
		})
	}
}

// A wait takes no more events than its batch; the rest wait for the next.
func TestWaitBatch(t *testing.T) {
	kinds(t, 2, func(t *testing.T, s *Set) {
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
	})
}

// A wait with nothing ready lasts its timeout: a wait of no time returns
// at once; a fine Set keeps a timeout under a millisecond, a coarse one
// rounds it up to one. Each figure is the median of a few waits, which a
// signal's early return (EINTR) does not move.
func TestWaitTimeout(t *testing.T) {
	kinds(t, 4, func(t *testing.T, s *Set) {
		near, _ := pair(t)
		watch(t, s, []int{near}, unix.EPOLLIN)
		median := func(d time.Duration) time.Duration {
			var took []time.Duration
			for range 9 {
				began := time.Now()
				evs, err := s.Wait(d)
				took = append(took, time.Since(began))
				if err != nil || len(evs) != 0 {
					t.Fatalf("Wait(%v) = %v, %v; want nothing", d, evs, err)
				}
			}
			slices.Sort(took)
			return took[len(took)/2]
		}
		// A coarse Set's wait of 300µs is a whole millisecond.
		short := 300 * time.Microsecond
		if !s.Fine() {
			short = time.Millisecond
		}
		for _, tc := range []struct {
			d     time.Duration
			least time.Duration // the median wait is at least this
			most  time.Duration // and, when set, less than this
		}{
			{d: -time.Second, most: 5 * time.Millisecond}, // a negative timeout is none
			{d: 0, most: 5 * time.Millisecond},            // none
			{d: 300 * time.Microsecond, least: short},
			{d: 5 * time.Millisecond, least: 5 * time.Millisecond}, // whole milliseconds either way
		} {
			got := median(tc.d)
			if got < tc.least || tc.most > 0 && got >= tc.most {
				t.Errorf("Wait(%v) lasted %v (median); want at least %v and less than %v", tc.d, got, tc.least, tc.most)
			}
		}
		if s.Fine() {
			// The shortest of the waits: load makes waits longer, never
			// shorter, so one under a millisecond shows the timeout kept.
			var shortest time.Duration = time.Hour
			for range 20 {
				began := time.Now()
				s.Wait(300 * time.Microsecond)
				shortest = min(shortest, time.Since(began))
			}
			if shortest >= time.Millisecond {
				t.Errorf("the shortest of 20 waits of 300µs lasted %v; a fine Set keeps them under a millisecond", shortest)
			}
		}
	})
}

// A descriptor number the Set watched, closed and then given to another
// socket (as the flood's connections are) is watched afresh: the new
// socket's bytes are reported under it.
func TestReusedDescriptor(t *testing.T) {
	kinds(t, 4, func(t *testing.T, s *Set) {
		old, _ := pair(t)
		watch(t, s, []int{old}, unix.EPOLLIN|unix.EPOLLET)
		near, far := pair(t)
		// dup3 closes old's socket and gives its number to near's in one
		// step, so no other descriptor can take the number between; old's
		// socket, which had no other descriptor, leaves the Set.
		if err := unix.Dup3(near, old, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		watch(t, s, []int{old}, unix.EPOLLIN|unix.EPOLLET)
		send(t, far, "x")
		if got := readyFDs(t, s, 50*time.Millisecond); !got[old] || len(got) != 1 {
			t.Fatalf("a wait reported %v; want the reused descriptor %d", got, old)
		}
	})
}
