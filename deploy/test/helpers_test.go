package deploytest

import (
	"cmp"
	"strconv"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// containerOf is the Job's container or init container named name; the test fails without it.
func containerOf(t *testing.T, job *batchv1.Job, name string) *corev1.Container {
	t.Helper()
	if c := initContainer(job, name); c != nil {
		return c
	}
	for i, c := range job.Spec.Template.Spec.Containers {
		if c.Name == name {
			return &job.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("Job %s has no container %s", job.Name, name)
	return nil
}

// initContainer is the Job's init container named name, or nil.
func initContainer(job *batchv1.Job, name string) *corev1.Container {
	for i, c := range job.Spec.Template.Spec.InitContainers {
		if c.Name == name {
			return &job.Spec.Template.Spec.InitContainers[i]
		}
	}
	return nil
}

// volume is the pod volume named name, or nil.
func volume(job *batchv1.Job, name string) *corev1.Volume {
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &job.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

// service is the Service of shard i, or nil.
func service(objs *Objects, i int) *corev1.Service {
	for _, s := range objs.Services {
		if s.Name == "crowd-"+strconv.Itoa(i) {
			return s
		}
	}
	return nil
}

// flagValue is the value of --name=V in argv ("" when absent).
func flagValue(argv []string, name string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}

// envValue is the literal value of variable name in c ("" when absent).
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// mountAt is the mount at path, or nil.
func mountAt(ms []Mount, path string) *Mount {
	for i := range ms {
		if ms[i].Path == path {
			return &ms[i]
		}
	}
	return nil
}

// sutAddress is sut.address of the values.
func sutAddress(vals chartutil.Values) string {
	return vals["sut"].(map[string]any)["address"].(string)
}

// servesPort reports whether container c exposes the Service port p targets (by number and
// protocol; TCP when unset, as Kubernetes defaults it).
func servesPort(c *corev1.Container, p corev1.ServicePort) bool {
	want := cmp.Or(p.Protocol, corev1.ProtocolTCP)
	for _, cp := range c.Ports {
		if int(cp.ContainerPort) == p.TargetPort.IntValue() && cmp.Or(cp.Protocol, corev1.ProtocolTCP) == want {
			return true
		}
	}
	return false
}
