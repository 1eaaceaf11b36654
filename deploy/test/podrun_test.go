package deploytest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/crowdfed/crowd/e2e"
	corev1 "k8s.io/api/core/v1"
)

// podRunner runs a rendered pod template's containers as local processes inside a network
// namespace (the pod's network), the kubelet's part done by hand: each volume is a folder, a
// mount's path in the container's arguments is that folder (sub-path included), JOB_COMPLETION_INDEX
// and the pod's address are set, and the crowd's image is the crowd binary built from the tree.
type podRunner struct {
	ns      *e2e.Netns
	pod     Pod
	volumes map[string]string // volume name -> host folder
	crowd   string            // the crowd binary: the image's entry point
	workdir string            // the image's working folder (/), a folder of the test's
}

// command is container c's command line and environment as the kubelet would start it here.
func (r *podRunner) command(t *testing.T, ctx context.Context, c corev1.Container) *exec {
	t.Helper()
	env, err := r.pod.Env(c)
	if err != nil {
		t.Fatal(err)
	}
	argv := Argv(c, env, []string{"crowd"})
	if argv[0] == "crowd" {
		argv[0] = r.crowd
	}
	mounts := Mounts(c, env)
	// The longest path first: /state/tls is inside /state, never the reverse.
	slices.SortFunc(mounts, func(a, b Mount) int { return len(b.Path) - len(a.Path) })
	for _, m := range mounts {
		root, ok := r.volumes[m.Volume]
		if !ok {
			t.Fatalf("container %s mounts volume %s, which this run has no folder for", c.Name, m.Volume)
		}
		host := filepath.Join(root, m.SubPath)
		if err := os.MkdirAll(host, 0o755); err != nil { // the kubelet makes a missing sub-path
			t.Fatal(err)
		}
		at := regexp.MustCompile(`(^|[\s='"])` + regexp.QuoteMeta(m.Path) + `(/|$|[\s'"])`)
		for i := range argv {
			argv[i] = at.ReplaceAllString(argv[i], "${1}"+host+"${2}")
		}
	}
	// Only the container's variables, as in a pod, and PATH for the tools' shell; CROWD_CRYPTO
	// when the test run chose a backend (CI does).
	list := []string{"PATH=" + os.Getenv("PATH")}
	if v, ok := os.LookupEnv("CROWD_CRYPTO"); ok {
		list = append(list, "CROWD_CRYPTO="+v)
	}
	for _, k := range SortedKeys(env) {
		list = append(list, k+"="+env[k])
	}
	cmd := r.ns.Command(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = list, r.workdir
	return &exec{Cmd: cmd, name: c.Name, argv: argv}
}

// exec is one container's process, named for messages.
type exec struct {
	*osexec.Cmd
	name string
	argv []string
}

// run runs container c to its end; its failure fails the test with its output.
func (r *podRunner) run(t *testing.T, c corev1.Container) {
	t.Helper()
	x := r.command(t, r.context(t), c)
	if out, err := x.CombinedOutput(); err != nil {
		t.Fatalf("container %s (%q): %v\n%s", x.name, x.argv, err, out)
	}
}

// commands are the pod's containers' processes, made (not started) here, in the test's
// goroutine, so the pod can run them in one of its own.
func (r *podRunner) commands(t *testing.T, cs []corev1.Container) []*exec {
	t.Helper()
	var out []*exec
	for _, c := range cs {
		out = append(out, r.command(t, r.context(t), c))
	}
	return out
}

// context bounds a container's run: generous, for a loaded CI machine, and ended with the test.
func (r *podRunner) context(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start starts sidecar c and waits until its startup probe (an HTTP GET) passes.
func (r *podRunner) start(t *testing.T, c corev1.Container) *e2e.Process {
	t.Helper()
	x := r.command(t, context.Background(), c)
	return e2e.StartProcess(t, x.Cmd, r.probe(c))
}

// probe is c's startup probe as a readiness check: an HTTP GET on the pod's loopback.
func (r *podRunner) probe(c corev1.Container) e2e.ReadyFunc {
	p := c.StartupProbe
	if p == nil || p.HTTPGet == nil {
		return nil
	}
	url := fmt.Sprintf("http://127.0.0.1:%d%s", p.HTTPGet.Port.IntValue(), p.HTTPGet.Path)
	client := r.ns.HTTPClient(nil, nil)
	return func(ctx context.Context, _ *e2e.Process) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", url, resp.Status)
		}
		return nil
	}
}

// initSteps runs the pod's init containers in order, starting the native sidecars and running
// the others to their end, and returns the sidecars.
func (r *podRunner) initSteps(t *testing.T, spec corev1.PodSpec) []*e2e.Process {
	t.Helper()
	var sidecars []*e2e.Process
	for _, c := range spec.InitContainers {
		if Sidecar(c) {
			sidecars = append(sidecars, r.start(t, c))
			continue
		}
		r.run(t, c)
	}
	return sidecars
}
