// Package deploytest renders the crowd's Helm chart (deploy/helm/crowd) with the real Helm, used
// as a library, and reads every rendered object strictly into its typed Kubernetes API value, so
// the chart's tests check what a cluster would be given, short of a cluster.
package deploytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Release is the release name every render uses, as `helm template crowd` names it; the
// objects are named after it (Job crowd, Services crowd-<i>).
const Release = "crowd"

// Rendered is one render of the chart: its manifests in install order and NOTES.txt.
type Rendered struct {
	// Manifests are the rendered objects' texts, in the order Helm installs them.
	Manifests []releaseutil.Manifest
	// Notes is the rendered NOTES.txt, what `helm install` prints.
	Notes string
}

// Render renders the chart in chartDir with values over its values.yaml, as `helm template`
// does (no cluster: lookup finds nothing). A template's fail is the returned error.
func Render(chartDir string, values map[string]any) (*Rendered, error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("load chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(chrt, values,
		chartutil.ReleaseOptions{Name: Release, Namespace: "default", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities.Copy())
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	files, err := engine.Render(chrt, vals)
	if err != nil {
		return nil, err
	}
	out := &Rendered{}
	manifests := map[string]string{}
	for name, text := range files {
		switch {
		case strings.HasSuffix(name, "NOTES.txt"):
			out.Notes = text
		case strings.HasSuffix(name, ".yaml") && strings.TrimSpace(text) != "":
			manifests[name] = text
		}
	}
	hooks, ms, err := releaseutil.SortManifests(manifests, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("sort manifests: %w", err)
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("the chart has %d hooks: the fleet is meant to have none", len(hooks))
	}
	out.Manifests = ms
	return out, nil
}

// Text is the render as `helm template` prints it: each object after "---" and its source.
func (r *Rendered) Text() string {
	var b strings.Builder
	for _, m := range r.Manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String()
}

// Objects are the rendered objects, decoded by Decode.
type Objects struct {
	Services []*corev1.Service
	Jobs     []*batchv1.Job
	Secrets  []*corev1.Secret
	Claims   []*corev1.PersistentVolumeClaim
	Maps     []*corev1.ConfigMap
}

// Job is the Job named name, or nil.
func (o *Objects) Job(name string) *batchv1.Job {
	for _, j := range o.Jobs {
		if j.Name == name {
			return j
		}
	}
	return nil
}

// Decode reads every manifest into its typed k8s.io/api value strictly: a field the type does
// not have, a kind the chart is not meant to make, or a second document in one manifest is an
// error naming the manifest.
func (r *Rendered) Decode() (*Objects, error) {
	out := &Objects{}
	var errs []error
	for _, m := range r.Manifests {
		if err := out.add(m); err != nil {
			errs = append(errs, fmt.Errorf("%s (%s %s): %w", m.Name, m.Head.Kind, m.Head.Metadata.Name, err))
		}
	}
	return out, errors.Join(errs...)
}

// add decodes one manifest into the slice of its kind.
func (o *Objects) add(m releaseutil.Manifest) error {
	switch kind := m.Head.Version + "/" + m.Head.Kind; kind {
	case "v1/Service":
		return decodeInto(&o.Services, m.Content)
	case "batch/v1/Job":
		return decodeInto(&o.Jobs, m.Content)
	case "v1/Secret":
		return decodeInto(&o.Secrets, m.Content)
	case "v1/PersistentVolumeClaim":
		return decodeInto(&o.Claims, m.Content)
	case "v1/ConfigMap":
		return decodeInto(&o.Maps, m.Content)
	default:
		return fmt.Errorf("kind %s: not one the chart is meant to make", kind)
	}
}

// decodeInto decodes doc strictly into a new T appended to list.
func decodeInto[T any](list *[]*T, doc string) error {
	v := new(T)
	if err := decodeStrict(doc, v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// SecretsByName are the Secrets, by name.
func (o *Objects) SecretsByName() map[string]*corev1.Secret {
	out := map[string]*corev1.Secret{}
	for _, s := range o.Secrets {
		out[s.Name] = s
	}
	return out
}

// decodeStrict reads one YAML document into v, refusing unknown fields.
func decodeStrict(doc string, v any) error {
	js, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one document")
	}
	return nil
}

// SortedKeys returns m's keys in order, for stable messages.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
