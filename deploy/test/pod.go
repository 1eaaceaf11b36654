package deploytest

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// CompletionIndexEnv is the variable the Job controller sets in every container of an indexed
// Job's pod to the pod's completion index.
const CompletionIndexEnv = "JOB_COMPLETION_INDEX"

// Pod is what the kubelet knows of one pod of a Job when it starts its containers.
type Pod struct {
	// Index is the completion index (0 … completions-1), -1 for a Job that is not indexed.
	Index int
	// IP is the pod's address (status.podIP).
	IP string
	// Secrets are the Secrets in the namespace, by name, for secretKeyRef.
	Secrets map[string]*corev1.Secret
}

// Env is container c's environment in pod p, as the kubelet makes it: JOB_COMPLETION_INDEX for an
// indexed pod, then c's variables in order, each value expanded with the ones before it, the
// field references the chart uses and Secret keys resolved. A reference it cannot resolve is an
// error naming the variable.
func (p Pod) Env(c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	if p.Index >= 0 {
		env[CompletionIndexEnv] = strconv.Itoa(p.Index)
	}
	for _, e := range c.Env {
		v, err := p.value(e, env)
		if err != nil {
			return nil, fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
		}
		env[e.Name] = v
	}
	return env, nil
}

// value is one variable's value in p.
func (p Pod) value(e corev1.EnvVar, env map[string]string) (string, error) {
	from := e.ValueFrom
	switch {
	case from == nil:
		return Expand(e.Value, env), nil
	case from.FieldRef != nil:
		switch path := from.FieldRef.FieldPath; path {
		case "status.podIP":
			return p.IP, nil
		case "metadata.annotations['batch.kubernetes.io/job-completion-index']", "metadata.labels['batch.kubernetes.io/job-completion-index']":
			return strconv.Itoa(p.Index), nil
		default:
			return "", fmt.Errorf("field %s: not one this runner knows", path)
		}
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, ok := p.Secrets[ref.Name]
		if !ok {
			return "", fmt.Errorf("no Secret %s", ref.Name)
		}
		if b, ok := s.Data[ref.Key]; ok {
			return string(b), nil
		}
		if v, ok := s.StringData[ref.Key]; ok {
			return v, nil
		}
		return "", fmt.Errorf("Secret %s has no key %s", ref.Name, ref.Key)
	}
	return "", fmt.Errorf("a source this runner does not know")
}

// Expand replaces each $(NAME) in s with env[NAME] as Kubernetes expands args and subPathExpr:
// $$ is a literal $, and a reference to an unset variable stays as written.
func Expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := env[name]; ok {
					b.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Argv is container c's command line with env: command then args, expanded. A container without
// a command runs its image's entry point, given here as entry (the crowd's image: crowd).
func Argv(c corev1.Container, env map[string]string, entry []string) []string {
	argv := c.Command
	if len(argv) == 0 {
		argv = entry
	}
	var out []string
	for _, a := range append(append([]string(nil), argv...), c.Args...) {
		out = append(out, Expand(a, env))
	}
	return out
}

// Mount is one volume mount of a container, its sub-path expanded.
type Mount struct {
	Volume, Path, SubPath string
	ReadOnly              bool
}

// Mounts are c's volume mounts with env.
func Mounts(c corev1.Container, env map[string]string) []Mount {
	var out []Mount
	for _, m := range c.VolumeMounts {
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = Expand(m.SubPathExpr, env)
		}
		out = append(out, Mount{Volume: m.Name, Path: m.MountPath, SubPath: sub, ReadOnly: m.ReadOnly})
	}
	return out
}

// Sidecar reports whether init container c is a native sidecar (restartPolicy: Always): it
// runs beside the containers instead of before them.
func Sidecar(c corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// Indexed reports whether j is an indexed Job, and its completions.
func Indexed(j *batchv1.Job) (bool, int) {
	n := 1
	if j.Spec.Completions != nil {
		n = int(*j.Spec.Completions)
	}
	return j.Spec.CompletionMode != nil && *j.Spec.CompletionMode == batchv1.IndexedCompletion, n
}
