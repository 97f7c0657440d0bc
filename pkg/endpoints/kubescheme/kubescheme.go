// Package kubescheme knows the kinds kube-apiserver's decoders know, by
// group version, and the Go types kube reads them into, so that a body of
// a kind the served resource cannot take is refused in kube's words: a
// kind kube knows cannot be converted ("converting (v1.ConfigMap) to
// (batch.CronJob): unknown conversion"), one it does not know is not
// registered (`no kind "Widget" is registered for version "batch/v1"`).
//
// kube decodes with three schemes: its built-in types (Legacy), those of
// its apiextensions server (APIExtensions, for CustomResourceDefinitions),
// and meta's (MetaInternal, for DeleteOptions bodies). Custom resources are
// read as they come, without a scheme.
package kubescheme

//go:generate go run ../../../hack/kindsgen -o legacy_generated.go

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Scheme is the set of kinds one of kube's decoders knows.
type Scheme struct {
	// types names the Go type of each kind a group version has.
	types map[schema.GroupVersionKind]string
	// anyVersion are the kinds known in every group version, even one the
	// scheme has nothing else in, and their Go types.
	anyVersion map[string]string
}

// metaKinds are in every group version of the built-in scheme, as meta/v1
// types.
var metaKinds = []string{"CreateOptions", "DeleteOptions", "GetOptions", "ListOptions", "PatchOptions", "UpdateOptions", "WatchEvent"}

// unversioned are meta/v1's kinds every scheme knows in any group version.
var unversioned = []string{"APIGroup", "APIGroupList", "APIResourceList", "APIVersions", "Status"}

var (
	// Legacy is kube-apiserver's scheme of built-in types.
	Legacy = newScheme(legacyKinds, metaKinds, unversioned)
	// APIExtensions is apiextensions-apiserver's: the definitions, and the
	// meta options also in the core version. WatchEvent it knows in any.
	APIExtensions = newScheme(map[string][]string{
		"apiextensions.k8s.io/v1":      {"ConversionReview", "CustomResourceDefinition", "CustomResourceDefinitionList"},
		"apiextensions.k8s.io/v1beta1": {"ConversionReview", "CustomResourceDefinition", "CustomResourceDefinitionList"},
		"v1":                           {},
	}, metaKinds, append([]string{"WatchEvent"}, unversioned...))
	// MetaInternal is meta's, which DeleteOptions bodies are decoded with:
	// DeleteOptions, CreateOptions and UpdateOptions in any group version.
	MetaInternal = metaInternal()
)

func newScheme(kinds map[string][]string, everyVersion, anyVersion []string) *Scheme {
	s := &Scheme{types: map[schema.GroupVersionKind]string{}, anyVersion: map[string]string{}}
	for gvString, ks := range kinds {
		gv, err := schema.ParseGroupVersion(gvString)
		if err != nil {
			panic(err)
		}
		for _, k := range ks {
			s.types[gv.WithKind(k)] = gv.Version + "." + k
		}
		for _, k := range everyVersion {
			s.types[gv.WithKind(k)] = "v1." + k
		}
	}
	for _, k := range anyVersion {
		s.anyVersion[k] = "v1." + k
	}
	return s
}

func metaInternal() *Scheme {
	s := newScheme(nil, nil, append([]string{"CreateOptions", "DeleteOptions", "UpdateOptions"}, unversioned...))
	v1 := schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"}
	for _, k := range []string{"GetOptions", "ListOptions", "PartialObjectMetadata", "PartialObjectMetadataList", "PatchOptions", "Table", "TableOptions", "WatchEvent"} {
		s.types[v1.WithKind(k)] = "v1." + k
	}
	// v1beta1's are v1's types, but for its own list.
	v1beta1 := schema.GroupVersion{Group: "meta.k8s.io", Version: "v1beta1"}
	for _, k := range []string{"PartialObjectMetadata", "Table", "TableOptions"} {
		s.types[v1beta1.WithKind(k)] = "v1." + k
	}
	s.types[v1beta1.WithKind("PartialObjectMetadataList")] = "v1beta1.PartialObjectMetadataList"
	return s
}

// TypeName returns the Go type kube reads gvk into ("v1.ConfigMap"), and
// whether the scheme knows gvk at all.
func (s *Scheme) TypeName(gvk schema.GroupVersionKind) (string, bool) {
	if t, ok := s.anyVersion[gvk.Kind]; ok {
		return t, true
	}
	t, ok := s.types[gvk]
	return t, ok
}

// Decode reports what kube's decoder with this scheme makes of a body of
// kind body read as an object of kind into, whose Go type is intoType:
// nil when it can read it (its version may still be refused), and kube's
// error when it cannot. A body of the kind into itself is always read.
func (s *Scheme) Decode(body schema.GroupVersionKind, into schema.GroupVersionKind, intoType string) error {
	if body == into {
		return nil
	}
	name, ok := s.TypeName(body)
	if !ok {
		return fmt.Errorf("no kind %q is registered for version %q in scheme %q", body.Kind, body.GroupVersion().String(), "pkg/runtime/scheme.go:100")
	}
	if s.sameType(body, into) {
		return nil
	}
	return fmt.Errorf("converting (%s) to (%s): unknown conversion", name, intoType)
}

// sameType tells whether kube reads both kinds into one type: the same
// kind of a group in any version, a kind known in any version, or an Event
// of the core group or of events.k8s.io, which are one internally.
func (s *Scheme) sameType(a, b schema.GroupVersionKind) bool {
	if a.Kind != b.Kind {
		return false
	}
	if _, ok := s.anyVersion[a.Kind]; ok || a.Group == b.Group {
		return true
	}
	return a.Kind == "Event" && coreEvents(a.Group) && coreEvents(b.Group)
}

func coreEvents(group string) bool { return group == "" || group == "events.k8s.io" }

// InternalType is the Go type kube reads a built-in (or definition) kind
// into before storing it: its group's internal package and the kind
// ("batch.CronJob"); the core group's is core, which Events of
// events.k8s.io are too.
func InternalType(gk schema.GroupKind) string {
	pkg, _, _ := strings.Cut(gk.Group, ".")
	switch gk.Group {
	case "", "events.k8s.io":
		pkg = "core"
	case "internal.apiserver.k8s.io":
		pkg = "apiserverinternal"
	}
	return pkg + "." + gk.Kind
}
