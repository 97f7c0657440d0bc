package apply

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/structured-merge-diff/v4/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v4/merge"
	"sigs.k8s.io/structured-merge-diff/v4/typed"
)

// Client-side apply (kubectl apply without --server-side) keeps its
// configuration in an annotation and its fields under an Update manager.
// kube-apiserver bridges the two for kubectl's own server-side apply, and
// so does this package: an apply by kubectlManager may take, without
// --force-conflicts, the fields that the annotation says the user set and
// that still hold the values set then; and its configuration becomes the
// annotation's, so that a later client-side apply merges against what was
// applied last. Any other manager opts out of both.
const (
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	kubectlManager        = "kubectl"
)

// Configuration is the body of an apply.
type Configuration struct {
	// Fields are the fields it sets, in the type's own representation.
	Fields map[string]interface{}
	// Sent is the body as the client sent it, unknown fields and all: what
	// the last-applied annotation records.
	Sent map[string]interface{}
}

// clientSideApplied is the set of fields a conflicting apply by kubectl
// may take over from client-side apply: those of the last-applied
// configuration recorded in live whose values live still holds. It is
// nil when live records none, or one that cannot be read as an object of
// this version.
func (m *Manager) clientSideApplied(annotations map[string]string, live *typed.TypedValue) *fieldpath.Set {
	recorded := annotations[LastAppliedAnnotation]
	if recorded == "" {
		return nil
	}
	var obj map[string]interface{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(recorded), &obj); err != nil || obj == nil {
		return nil
	}
	if v, _ := obj["apiVersion"].(string); v != m.apiVersion {
		return nil
	}
	last, err := m.pt.FromUnstructured(obj)
	if err != nil {
		return nil
	}
	fields, err := last.ToFieldSet()
	if err != nil {
		return nil
	}
	cmp, err := last.Compare(live)
	if err != nil {
		return nil
	}
	// A field whose value changed since, or that appeared or went away,
	// is no longer the client-side applier's to hand over.
	return fields.Difference(cmp.Modified).Difference(cmp.Added).Difference(cmp.Removed)
}

// outside are the conflicts on fields not in allowed.
func outside(conflicts merge.Conflicts, allowed *fieldpath.Set) merge.Conflicts {
	var out merge.Conflicts
	for _, c := range conflicts {
		if !allowed.Has(c.Path) {
			out = append(out, c)
		}
	}
	return out
}

// recordLastApplied rewrites, after an apply by kubectl, the last-applied
// annotation of an object that has one with the configuration sent. It
// goes away instead when it would take the annotations over their size
// limit, as kube drops it.
func recordLastApplied(om metav1.Object, sent map[string]interface{}) error {
	annotations := om.GetAnnotations()
	if annotations[LastAppliedAnnotation] == "" {
		return nil
	}
	value, err := lastApplied(sent)
	if err != nil {
		return err
	}
	annotations[LastAppliedAnnotation] = value
	if validation.ValidateAnnotationsSize(annotations) != nil {
		delete(annotations, LastAppliedAnnotation)
	}
	om.SetAnnotations(annotations)
	return nil
}

// lastApplied is the annotation's value for a configuration: the
// configuration without the annotation itself, as JSON with its keys in
// order and a final newline, the form kubectl writes it in.
func lastApplied(sent map[string]interface{}) (string, error) {
	obj := sent
	if md, ok := sent["metadata"].(map[string]interface{}); ok {
		if a, has := md["annotations"]; has {
			obj = shallowCopy(sent)
			md = shallowCopy(md)
			obj["metadata"] = md
			// Annotations that are not a map of strings are none at all,
			// as an unstructured object reads them.
			if kept, ok := stringMapWithout(a, LastAppliedAnnotation); ok {
				md["annotations"] = kept
			} else {
				delete(md, "annotations")
			}
		}
	}
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(obj); err != nil {
		return "", fmt.Errorf("encoding the last-applied configuration: %w", err)
	}
	return b.String(), nil
}

func shallowCopy(m map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// stringMapWithout is v, a map of strings, without key; ok is false when
// v is not a map of strings.
func stringMapWithout(v interface{}, key string) (map[string]interface{}, bool) {
	m, ok := v.(map[string]interface{})
	if !ok {
		return nil, false
	}
	out := make(map[string]interface{}, len(m))
	for k, s := range m {
		if _, ok := s.(string); !ok {
			return nil, false
		}
		if k != key {
			out[k] = s
		}
	}
	return out, true
}
