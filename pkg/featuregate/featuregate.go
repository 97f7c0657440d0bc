// Package featuregate owns the server's feature gates: which exist, their
// stage and default, and the --feature-gates flag that overrides them at
// start. Gates are read-only once the server runs.
package featuregate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
)

// Stage is a gate's maturity.
type Stage string

const (
	Alpha Stage = "ALPHA"
	Beta  Stage = "BETA"
	GA    Stage = "GA"
	// Deprecated gates still work, and will be removed.
	Deprecated Stage = "DEPRECATED"
)

// Spec describes a gate.
type Spec struct {
	Default bool
	Stage   Stage
	// LockToDefault gates (GA) may only be set to their default.
	LockToDefault bool
}

// Gates known to the server.
const (
	// WatchList: watches with sendInitialEvents stream the initial state.
	WatchList = "WatchList"
	// APIResponseCompression: gzip large responses when clients accept it.
	APIResponseCompression = "APIResponseCompression"
	// ServiceAccountTokenJTI: service account tokens carry a jti, and the
	// users they authenticate name it as their credential.
	ServiceAccountTokenJTI = "ServiceAccountTokenJTI"
	// CRDValidationRatcheting: updates of custom objects are forgiven
	// the validation errors of values they leave unchanged, and
	// validation rules may set optionalOldSelf.
	CRDValidationRatcheting = "CRDValidationRatcheting"
	// ValidatingAdmissionPolicy: admissionregistration.k8s.io/v1beta1
	// policies and bindings are served (if --runtime-config enables
	// them) and enforced.
	ValidatingAdmissionPolicy = "ValidatingAdmissionPolicy"
)

// Known are the gates and their specs, as kube v1.29 has them.
var Known = map[string]Spec{
	WatchList:                 {Default: false, Stage: Alpha},
	APIResponseCompression:    {Default: true, Stage: Beta},
	ServiceAccountTokenJTI:    {Default: false, Stage: Alpha},
	CRDValidationRatcheting:   {Default: false, Stage: Alpha},
	ValidatingAdmissionPolicy: {Default: false, Stage: Beta},
	// GA: always on, accepted so that kube's command lines work.
	"APIListChunking":           {Default: true, Stage: GA, LockToDefault: true},
	"EfficientWatchResumption":  {Default: true, Stage: GA, LockToDefault: true},
	"ServerSideApply":           {Default: true, Stage: GA, LockToDefault: true},
	"ServerSideFieldValidation": {Default: true, Stage: GA, LockToDefault: true},
	"WatchBookmark":             {Default: true, Stage: GA, LockToDefault: true},
}

// Gates is a set of gate values.
type Gates struct {
	known   map[string]Spec
	enabled map[string]bool
}

// New returns the defaults of known.
func New(known map[string]Spec) *Gates {
	g := &Gates{known: known, enabled: map[string]bool{}}
	for name, s := range known {
		g.enabled[name] = s.Default
	}
	return g
}

// Enabled reports whether a gate is on; unknown gates are off.
func (g *Gates) Enabled(name string) bool { return g.enabled[name] }

// Set applies a --feature-gates value: comma-separated Name=bool pairs.
func (g *Gates) Set(value string) error {
	for _, pair := range strings.Split(value, ",") {
		pair = strings.TrimSpace(pair)
		if pair == "" {
			continue
		}
		name, v, ok := strings.Cut(pair, "=")
		if !ok {
			return fmt.Errorf("missing bool value for %s", name)
		}
		spec, known := g.known[name]
		if !known {
			return fmt.Errorf("unrecognized feature gate: %s", name)
		}
		on, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("invalid value of %s=%s, err: %v", name, v, err)
		}
		if spec.LockToDefault && on != spec.Default {
			return fmt.Errorf("cannot set feature gate %v to %v, feature is locked to %v", name, on, spec.Default)
		}
		g.enabled[name] = on
		// Logged while the flags are parsed, as kube does: in klog's text
		// form even when --logging-format=json applies later.
		switch spec.Stage {
		case GA:
			klog.Warningf("Setting GA feature gate %s=%t. It will be removed in a future release.", name, on)
		case Deprecated:
			klog.Warningf("Setting deprecated feature gate %s=%t. It will be removed in a future release.", name, on)
		}
	}
	return nil
}

// String lists the gates that differ from their default.
func (g *Gates) String() string {
	var out []string
	for name, on := range g.enabled {
		if on != g.known[name].Default {
			out = append(out, fmt.Sprintf("%s=%t", name, on))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Type names the flag's value type in help output.
func (g *Gates) Type() string { return "mapStringBool" }

// Help lists every gate for the flag's usage text.
func (g *Gates) Help() string {
	names := make([]string, 0, len(g.known))
	for n := range g.known {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:")
	for _, n := range names {
		s := g.known[n]
		fmt.Fprintf(&b, "\n%s=true|false (%s - default=%t)", n, s.Stage, s.Default)
	}
	return b.String()
}
