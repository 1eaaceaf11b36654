package statedir

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestPrepare(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("x"), 0o600)
	for _, c := range []struct {
		name, dir string
		wantErr   string // "" for success
	}{
		// A directory that exists is used as it is.
		{"existing", dir, ""},
		// A missing one is created, parents included.
		{"missing", filepath.Join(dir, "a", "b"), ""},
		// A file is refused once, naming the flag.
		{"a file", file, "--state " + file + " is a file"},
		// Below a file nothing can be created.
		{"below a file", filepath.Join(file, "sub"), "--state " + filepath.Join(file, "sub")},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Prepare(c.dir)
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if st, err := os.Stat(c.dir); err != nil || !st.IsDir() {
					t.Fatalf("%s is not a directory after Prepare: %v", c.dir, err)
				}
				return
			}
			if !errors.Is(err, ErrNotDir) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want ErrNotDir with %q", err, c.wantErr)
			}
		})
	}
}

func TestSecondOwnerIsRefusedNamingThePid(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(dir)
	pid := "pid " + strconv.Itoa(os.Getpid())
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), pid) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Acquire: %v, want ErrInUse naming %s and %s", err, pid, dir)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	l2.Release()
	l2.Release() // idempotent
}

// TestInUseAdvice: a second owner is told what to do by the kind of
// command it is; the owner and the directory are named either way.
func TestInUseAdvice(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	for _, c := range []struct {
		name            string
		acquire         func(string) (*Lock, error)
		advice, notSaid string
	}{
		// A serve may stop the owner or make a crowd of its own elsewhere.
		{"serve", Acquire, ": stop it, or pass another --state", ""},
		// A command on an existing crowd's state (prune, rotate) gives
		// its own advice: another --state would be another crowd's.
		{"existing", AcquireExisting, "", "pass another --state"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.acquire(dir)
			owned := "--state " + dir + " is owned by another crowd process, pid " + strconv.Itoa(os.Getpid())
			if !errors.Is(err, ErrInUse) || !strings.HasSuffix(err.Error(), owned+c.advice) {
				t.Fatalf("err = %v, want ErrInUse ending %q", err, owned+c.advice)
			}
			if c.notSaid != "" && strings.Contains(err.Error(), c.notSaid) {
				t.Errorf("err = %v, says %q", err, c.notSaid)
			}
		})
	}
}

// TestLockReleasedButHeldByAChild: a lock this process released while a
// child it was starting held a copy of the descriptor (fork copies it; exec
// closes it) is free at once, not refused as another owner's.
func TestLockReleasedButHeldByAChild(t *testing.T) {
	dir := t.TempDir()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A child that keeps the descriptor open a while, as one between fork
	// and exec does for a moment.
	child := exec.Command("sleep", "0.3")
	child.ExtraFiles = []*os.File{l.f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire while a child held the released lock: %v", err)
	}
	l2.Release()
}

// The lock holder for TestKillReleasesTheLock: it takes the lock, says so
// and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("STATEDIR_TEST_HOLD"); dir != "" {
		if _, err := Acquire(dir); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		select {}
	}
	os.Exit(m.Run())
}

func TestKillReleasesTheLock(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STATEDIR_TEST_HOLD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("holder said %q", line)
	}
	_, err = Acquire(dir)
	if want := "pid " + strconv.Itoa(cmd.Process.Pid); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Acquire while held: %v, want ErrInUse naming %s", err, want)
	}
	cmd.Process.Kill() // SIGKILL: no chance to clean up
	cmd.Wait()
	l, err := Acquire(dir)
	if err != nil {
		t.Fatalf("Acquire after the owner was killed: %v", err)
	}
	l.Release()
}
