package audit

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"github.com/cronplane/cronplane/pkg/auth/authorizer"
)

// RequestConfig is what the policy decided for one request.
type RequestConfig struct {
	Level             Level
	OmitStages        []Stage
	OmitManagedFields bool
}

// LoadPolicy reads a Policy file, YAML or JSON.
func LoadPolicy(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading audit policy: %w", err)
	}
	p, err := ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePolicy decodes and validates an audit.k8s.io/v1 Policy. Unknown or
// duplicate fields are warned about and ignored, as kube does.
func ParsePolicy(data []byte) (*Policy, error) {
	p := &Policy{}
	if strictErr := yaml.UnmarshalStrict(data, p); strictErr != nil {
		p = &Policy{}
		if err := yaml.Unmarshal(data, p); err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		klog.ErrorS(strictErr, "Audit policy contains errors, falling back to lenient decoding")
	}
	if p.APIVersion != GroupVersion || p.Kind != "Policy" {
		return nil, fmt.Errorf("want apiVersion %s and kind Policy, got apiVersion %q and kind %q", GroupVersion, p.APIVersion, p.Kind)
	}
	if errs := validatePolicy(p); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("a policy needs at least one rule")
	}
	return p, nil
}

func validatePolicy(p *Policy) field.ErrorList {
	errs := validateStages(p.OmitStages, field.NewPath("omitStages"))
	for i, r := range p.Rules {
		path := field.NewPath("rules").Index(i)
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		case "":
			errs = append(errs, field.Required(path.Child("level"), ""))
		default:
			errs = append(errs, field.NotSupported(path.Child("level"), r.Level, []string{string(LevelNone), string(LevelMetadata), string(LevelRequest), string(LevelRequestResponse)}))
		}
		for j, u := range r.NonResourceURLs {
			p := path.Child("nonResourceURLs").Index(j)
			if u == "*" {
				continue
			}
			if !strings.HasPrefix(u, "/") {
				errs = append(errs, field.Invalid(p, u, "non-resource URL rules must begin with a '/' character"))
			}
			if u != "" && strings.Contains(u[:len(u)-1], "*") {
				errs = append(errs, field.Invalid(p, u, "non-resource URL wildcards '*' must be the final character of the rule"))
			}
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		for _, gr := range r.Resources {
			if gr.Group != "" {
				if msgs := validation.NameIsDNSSubdomain(gr.Group, false); len(msgs) > 0 {
					errs = append(errs, field.Invalid(path.Child("resources", "group"), gr.Group, strings.Join(msgs, ",")))
				}
			}
			if len(gr.ResourceNames) > 0 && len(gr.Resources) == 0 {
				errs = append(errs, field.Invalid(path.Child("resources", "resourceNames"), gr.ResourceNames, "using resourceNames requires at least one resource"))
			}
		}
		errs = append(errs, validateStages(r.OmitStages, path.Child("omitStages"))...)
	}
	return errs
}

func validateStages(ss []Stage, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, s := range ss {
		if !slices.Contains(stages, s) {
			names := make([]string, len(stages))
			for j, st := range stages {
				names[j] = string(st)
			}
			errs = append(errs, field.Invalid(path.Index(i), string(s), "allowed stages are "+strings.Join(names, ",")))
		}
	}
	return errs
}

// Evaluate returns the configuration of the first rule matching a;
// without a match, level None.
func (p *Policy) Evaluate(a authorizer.Attributes) RequestConfig {
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.matches(a) {
			omitManagedFields := p.OmitManagedFields
			if r.OmitManagedFields != nil {
				omitManagedFields = *r.OmitManagedFields
			}
			return RequestConfig{Level: r.Level, OmitStages: unionStages(p.OmitStages, r.OmitStages), OmitManagedFields: omitManagedFields}
		}
	}
	return RequestConfig{Level: LevelNone, OmitStages: p.OmitStages, OmitManagedFields: p.OmitManagedFields}
}

func unionStages(a, b []Stage) []Stage {
	out := append([]Stage(nil), a...)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (r *PolicyRule) matches(a authorizer.Attributes) bool {
	if len(r.Users) > 0 && (a.User == nil || !slices.Contains(r.Users, a.User.Name)) {
		return false
	}
	if len(r.UserGroups) > 0 {
		if a.User == nil || !hasAny(r.UserGroups, a.User.Groups) {
			return false
		}
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, a.Verb) {
		return false
	}
	switch {
	case len(r.Namespaces) > 0 || len(r.Resources) > 0:
		return r.matchesResource(a)
	case len(r.NonResourceURLs) > 0:
		return !a.ResourceRequest && r.matchesPath(a.Path)
	}
	return true
}

// matchesResource: the namespace ("" for cluster-scoped resources), then
// the group, then "resource", "resource/subresource", "*", "*/subresource"
// or "resource/*", then the names.
func (r *PolicyRule) matchesResource(a authorizer.Attributes) bool {
	if !a.ResourceRequest {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, a.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := a.Resource
	if a.Subresource != "" {
		combined += "/" + a.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != a.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, a.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == "*" || res == combined:
				return true
			case a.Subresource != "" && res == "*/"+a.Subresource:
				return true
			case strings.HasSuffix(res, "/*") && res == a.Resource+"/*":
				return true
			}
		}
	}
	return false
}

// matchesPath: "*", the path itself, or a prefix ending in "*".
func (r *PolicyRule) matchesPath(path string) bool {
	for _, spec := range r.NonResourceURLs {
		if spec == "*" || spec == path {
			return true
		}
		if prefix, ok := strings.CutSuffix(spec, "*"); ok && strings.HasPrefix(path, prefix) {
			return true
		}
	}
	return false
}

func hasAny(list, candidates []string) bool {
	for _, c := range candidates {
		if slices.Contains(list, c) {
			return true
		}
	}
	return false
}
