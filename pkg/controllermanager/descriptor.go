package controllermanager

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
)

// Descriptor describes one controller: what it is called, what it needs
// served, and how it starts. Adding a controller is adding a descriptor
// to Controllers.
type Descriptor struct {
	// Name is the controller's name as kube names it
	// ("cronjob-controller"): in --controllers, in logs, and as its
	// /healthz check.
	Name string
	// Aliases are other names --controllers accepts ("cronjob").
	Aliases []string
	// Requires are the resources the controller works on. It is not
	// started when discovery answers that one of them is not served; when
	// discovery cannot answer, it is, as kube starts every controller
	// without asking.
	Requires []schema.GroupVersionResource
	// Start builds the controller and returns its loop, which the manager
	// runs once the shared informers have started, until ctx ends.
	Start func(cc *ControllerContext) (run func(ctx context.Context), err error)
}

// ControllerContext is what a controller is built from.
type ControllerContext struct {
	Options Options
	// Clients hands each controller clients of its own.
	Clients ClientBuilder
	// Informers are shared by every controller; the manager starts them
	// after all controllers are built.
	Informers informers.SharedInformerFactory
	// Recorder returns an event recorder for a component, sending events
	// through the named controller's own client.
	Recorder func(controller, component string) (record.EventRecorder, error)
	// metrics are the process's, for the controllers' own metrics.
	metrics *managerMetrics
}

// Controllers are the controllers this controller-manager runs.
func Controllers() []Descriptor {
	return []Descriptor{cronJobController(), jobController(), garbageCollectorController(), namespaceController(), nodeLifecycleController(), podGCController(), clusterRoleAggregationController(), serviceAccountController(), rootCACertPublisher(), ttlAfterFinishedController(), schedulerController()}
}

// names returns the names and aliases of the descriptors.
func names(ds []Descriptor) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
		out = append(out, d.Aliases...)
	}
	return out
}

// lookup finds a descriptor by name or alias.
func lookup(ds []Descriptor, name string) (Descriptor, bool) {
	for _, d := range ds {
		if d.Name == name || slices.Contains(d.Aliases, name) {
			return d, true
		}
	}
	return Descriptor{}, false
}

// enabled resolves --controllers as kube does: "*" is every controller,
// "name" adds one, "-name" leaves one out; a name may be an alias. It
// returns the descriptors to run, in Controllers order.
func enabled(ds []Descriptor, list []string) ([]Descriptor, error) {
	on, off := map[string]bool{}, map[string]bool{}
	all := false
	for _, c := range list {
		if c == "*" {
			all = true
			continue
		}
		name, exclude := strings.CutPrefix(c, "-")
		d, ok := lookup(ds, name)
		if !ok {
			return nil, fmt.Errorf("%q is not in the list of known controllers %v", name, names(ds))
		}
		if exclude {
			off[d.Name] = true
		} else {
			on[d.Name] = true
		}
	}
	var out []Descriptor
	for _, d := range ds {
		if !off[d.Name] && (all || on[d.Name]) {
			out = append(out, d)
		}
	}
	return out, nil
}

// unserved returns the first of the resources discovery does not list,
// or nil. The error is discovery's when it could not answer (forbidden,
// unreachable, failing): then nobody knows what is served.
func unserved(disc discovery.DiscoveryInterface, resources []schema.GroupVersionResource) (*schema.GroupVersionResource, error) {
	for i, gvr := range resources {
		list, err := disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return &resources[i], nil
		}
		if err != nil {
			return nil, err
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Name == gvr.Resource
		}
		if !found {
			return &resources[i], nil
		}
	}
	return nil, nil
}

// ControllerNames lists the controllers for --help, each with its
// aliases: "cronjob-controller (cronjob), ...".
func ControllerNames() string {
	var parts []string
	for _, d := range Controllers() {
		if len(d.Aliases) == 0 {
			parts = append(parts, d.Name)
			continue
		}
		parts = append(parts, d.Name+" ("+strings.Join(d.Aliases, ", ")+")")
	}
	return strings.Join(parts, ", ")
}
