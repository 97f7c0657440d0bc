package flowcontrol

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
)

// Digest is what classification reads of a request: who sends it and
// what it asks for.
type Digest struct {
	User *user.Info
	Info *request.RequestInfo
}

// serviceAccountPrefix starts the user name of a service account:
// system:serviceaccount:<namespace>:<name>.
const serviceAccountPrefix = "system:serviceaccount:"

// matches reports whether fs classifies d: some rule has a subject that
// is the sender and a resource or non-resource rule that is the request.
func matches(fs *flowcontrolv1.FlowSchema, d Digest) bool {
	for i := range fs.Spec.Rules {
		if matchesRule(&fs.Spec.Rules[i], d) {
			return true
		}
	}
	return false
}

func matchesRule(r *flowcontrolv1.PolicyRulesWithSubjects, d Digest) bool {
	if !slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool { return matchesSubject(s, d.User) }) {
		return false
	}
	if d.Info.IsResourceRequest {
		return slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return matchesResourceRule(rr, d.Info) })
	}
	return slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return matchesNonResourceRule(nr, d.Info) })
}

func matchesSubject(s flowcontrolv1.Subject, u *user.Info) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == flowcontrolv1.NameAll || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == flowcontrolv1.NameAll || slices.Contains(u.Groups, s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		ns, name, ok := strings.Cut(strings.TrimPrefix(u.Name, serviceAccountPrefix), ":")
		if !ok || !strings.HasPrefix(u.Name, serviceAccountPrefix) {
			return false
		}
		return (s.ServiceAccount.Namespace == flowcontrolv1.NamespaceEvery || s.ServiceAccount.Namespace == ns) &&
			(s.ServiceAccount.Name == flowcontrolv1.NameAll || s.ServiceAccount.Name == name)
	}
	return false
}

// matchesAll reports whether list holds want or the wildcard.
func matchesAll(list []string, want string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, want)
}

func matchesResourceRule(rr flowcontrolv1.ResourcePolicyRule, ri *request.RequestInfo) bool {
	if !matchesAll(rr.Verbs, ri.Verb) || !matchesAll(rr.APIGroups, ri.APIGroup) {
		return false
	}
	resource := ri.Resource
	if ri.Subresource != "" {
		resource += "/" + ri.Subresource
	}
	if !matchesAll(rr.Resources, resource) {
		return false
	}
	if ri.Namespace == "" {
		return rr.ClusterScope
	}
	return matchesAll(rr.Namespaces, ri.Namespace)
}

func matchesNonResourceRule(nr flowcontrolv1.NonResourcePolicyRule, ri *request.RequestInfo) bool {
	if !matchesAll(nr.Verbs, ri.Verb) {
		return false
	}
	for _, u := range nr.NonResourceURLs {
		if u == "*" || u == ri.Path {
			return true
		}
		// A rule covers the paths below it, "/healthz" and "/healthz/*"
		// alike.
		prefix := strings.TrimSuffix(u, "*")
		if !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.HasPrefix(ri.Path, prefix) {
			return true
		}
	}
	return false
}

// distinguisher is the part of the flow's name the schema's
// distinguisher method takes from the request.
func distinguisher(fs *flowcontrolv1.FlowSchema, d Digest) string {
	if fs.Spec.DistinguisherMethod == nil {
		return ""
	}
	switch fs.Spec.DistinguisherMethod.Type {
	case flowcontrolv1.FlowDistinguisherMethodByUserType:
		return d.User.Name
	case flowcontrolv1.FlowDistinguisherMethodByNamespaceType:
		return d.Info.Namespace
	}
	return ""
}

// sortSchemaEntries orders the schemas as they are tried: by
// matchingPrecedence, then by name.
func sortSchemaEntries(ss []*schemaEntry) {
	slices.SortFunc(ss, func(a, b *schemaEntry) int {
		if a.fs.Spec.MatchingPrecedence != b.fs.Spec.MatchingPrecedence {
			return int(a.fs.Spec.MatchingPrecedence - b.fs.Spec.MatchingPrecedence)
		}
		return strings.Compare(a.fs.Name, b.fs.Name)
	})
}

// schemaEntry is a flow schema whose level exists, with what a request
// it classifies needs, resolved once per configuration.
type schemaEntry struct {
	fs       *flowcontrolv1.FlowSchema
	pl       *flowcontrolv1.PriorityLevelConfiguration
	level    *level
	maxSeats int
	// hash is the flow hash of the schema's name, to which the
	// distinguisher is added.
	hash uint64
	// m is the schema's metrics, resolved at its first request: a
	// metric child exists from then on, as in kube.
	m atomic.Pointer[flowMetrics]
}

// metrics is the schema's per-request metrics, from ms.
func (s *schemaEntry) metrics(ms *metricSet) *flowMetrics {
	if m := s.m.Load(); m != nil {
		return m
	}
	m := ms.flow(s.fs.Name, s.level.name())
	s.m.Store(m)
	return m
}

// classifier is one configuration's schemas, in matching order, and the
// classifications made with them: the requests of a flow come again and
// again with the same sender and target, so all but the first cost a
// hash and a lookup instead of a walk over the schemas' rules.
type classifier struct {
	schemas []*schemaEntry

	mu    sync.RWMutex
	cache map[uint64]*classified
}

// classified is a past classification: the part of the digest that
// decided it and the schema it found (nil: none).
type classified struct {
	key    classKey
	schema *schemaEntry
}

// classifierCacheSize bounds the classifications kept; the cache starts
// over when full, so that senders or targets never seen again do not
// pile up.
const classifierCacheSize = 4096

// classKey is all classification reads of a request: the sender, and
// the verb and target (resource requests) or path (others). A resource
// request's name is not part of it.
type classKey struct {
	user                                                   string
	groups                                                 []string
	resource                                               bool
	verb, apiGroup, resourceName, subresource, ns, urlPath string
}

func keyOf(d Digest) classKey {
	k := classKey{user: d.User.Name, groups: d.User.Groups, resource: d.Info.IsResourceRequest, verb: d.Info.Verb}
	if k.resource {
		k.apiGroup, k.resourceName, k.subresource, k.ns = d.Info.APIGroup, d.Info.Resource, d.Info.Subresource, d.Info.Namespace
	} else {
		k.urlPath = d.Info.Path
	}
	return k
}

var classSeed = maphash.MakeSeed()

func (k *classKey) hash() uint64 {
	var h maphash.Hash
	h.SetSeed(classSeed)
	// The fields apart: a zero byte never occurs in them.
	field := func(s string) {
		_, _ = h.WriteString(s)
		_ = h.WriteByte(0)
	}
	field(k.user)
	for _, g := range k.groups {
		field(g)
	}
	if k.resource {
		_ = h.WriteByte(1)
	}
	for _, s := range [...]string{k.verb, k.apiGroup, k.resourceName, k.subresource, k.ns, k.urlPath} {
		field(s)
	}
	return h.Sum64()
}

func (k *classKey) equal(o *classKey) bool {
	return k.user == o.user && slices.Equal(k.groups, o.groups) && k.resource == o.resource && k.verb == o.verb &&
		k.apiGroup == o.apiGroup && k.resourceName == o.resourceName && k.subresource == o.subresource && k.ns == o.ns &&
		k.urlPath == o.urlPath
}

// classify is the first schema matching d, nil when none does.
func (cls *classifier) classify(d Digest) *schemaEntry {
	key := keyOf(d)
	h := key.hash()
	cls.mu.RLock()
	c, ok := cls.cache[h]
	cls.mu.RUnlock()
	if ok && c.key.equal(&key) {
		return c.schema
	}
	var found *schemaEntry
	for _, s := range cls.schemas {
		if matches(s.fs, d) {
			found = s
			break
		}
	}
	// The cache keeps its own groups: the caller's slice is not ours.
	key.groups = slices.Clone(key.groups)
	cls.mu.Lock()
	if len(cls.cache) >= classifierCacheSize || cls.cache == nil {
		cls.cache = make(map[uint64]*classified, 64)
	}
	cls.cache[h] = &classified{key: key, schema: found}
	cls.mu.Unlock()
	return found
}
