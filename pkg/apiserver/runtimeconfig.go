package apiserver

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// maturityKeys switch group versions on or off by the maturity of their
// version. They apply in this order, before any narrower key, so that
// api/all=false,api/ga=true serves exactly the GA versions.
var maturityKeys = []struct {
	key     string
	matches func(version string) bool
}{
	{"api/all", func(string) bool { return true }},
	{"api/ga", func(v string) bool { return !strings.Contains(v, "alpha") && !strings.Contains(v, "beta") }},
	{"api/beta", func(v string) bool { return !strings.Contains(v, "alpha") && strings.Contains(v, "beta") }},
	{"api/alpha", func(v string) bool { return strings.Contains(v, "alpha") }},
}

var coreV1 = schema.GroupVersion{Version: "v1"}

// offByDefault are the group versions served only when a key turns
// them on (api/all, api/beta or their own), as kube v1.29 has beta APIs
// newer than v1.24.
var offByDefault = map[schema.GroupVersion]bool{
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}: true,
}

// namespaces must always be served: the server creates the built-in
// namespaces at start and admits every namespaced write against them.
var namespaces = coreV1.WithResource("namespaces")

// ResolveRuntimeConfig returns which of the available resources are served
// under runtimeConfig, the --runtime-config map (kube-apiserver v1.29
// semantics). Everything available is served unless a key says otherwise
// (offByDefault only when one says so); keys apply from broadest to
// narrowest whatever their order on the command line: api/all, then
// api/ga, api/beta and api/alpha, then group versions, then single
// resources. The core group version is written api/v1, v1 or
// api/legacy, its resources api/v1/<resource> or v1/<resource>. A value
// other than true, false or empty (true), a key naming something not
// available, or leaving namespaces unserved is an error.
func ResolveRuntimeConfig(runtimeConfig map[string]string, available []schema.GroupVersionResource) (map[schema.GroupVersionResource]bool, error) {
	gvServed := map[schema.GroupVersion]bool{}
	for _, gvr := range available {
		gvServed[gvr.GroupVersion()] = !offByDefault[gvr.GroupVersion()]
	}
	known := func(gvr schema.GroupVersionResource) bool {
		for _, a := range available {
			if a == gvr || (gvr.Resource == "" && a.GroupVersion() == gvr.GroupVersion()) {
				return true
			}
		}
		return false
	}

	// Sorted, so that errors and conflicting aliases (api/v1 and v1) come
	// out the same on every start.
	keys := slices.Sorted(maps.Keys(runtimeConfig))
	type setting struct {
		gvr schema.GroupVersionResource
		on  bool
	}
	maturities := map[string]bool{}
	var versions, resources []setting
	var unknown []string
	for _, key := range keys {
		var on bool
		switch v := runtimeConfig[key]; v {
		case "", "true":
			on = true
		case "false":
		default:
			return nil, fmt.Errorf("--runtime-config: invalid value %s=%s: want true or false", key, v)
		}
		if isMaturityKey(key) {
			maturities[key] = on
			continue
		}
		gvr, err := parseRuntimeConfigKey(key)
		switch {
		case err != nil:
			return nil, err
		case !known(gvr):
			unknown = append(unknown, key)
		case gvr.Resource == "":
			versions = append(versions, setting{gvr, on})
		default:
			resources = append(resources, setting{gvr, on})
		}
	}
	if len(unknown) > 0 {
		var have []string
		for _, gvr := range available {
			have = append(have, gvr.GroupVersion().String()+"/"+gvr.Resource)
		}
		return nil, fmt.Errorf("--runtime-config: unknown api groups, versions or resources %s (this server has %s)",
			strings.Join(unknown, ", "), strings.Join(have, ", "))
	}

	for _, m := range maturityKeys {
		if on, ok := maturities[m.key]; ok {
			for gv := range gvServed {
				if m.matches(gv.Version) {
					gvServed[gv] = on
				}
			}
		}
	}
	for _, v := range versions {
		gvServed[v.gvr.GroupVersion()] = v.on
	}
	served := map[schema.GroupVersionResource]bool{}
	for _, gvr := range available {
		if gvServed[gvr.GroupVersion()] {
			served[gvr] = true
		}
	}
	// A resource key wins over its group version, either way.
	for _, r := range resources {
		if r.on {
			served[r.gvr] = true
		} else {
			delete(served, r.gvr)
		}
	}

	if known(namespaces) && !served[namespaces] {
		what := "the core group version v1"
		if gvServed[coreV1] {
			what = "v1/namespaces"
		}
		return nil, fmt.Errorf("--runtime-config: %s cannot be disabled: the server needs namespaces (it creates the built-in ones and checks every namespaced write against them)", what)
	}
	return served, nil
}

func isMaturityKey(key string) bool {
	for _, m := range maturityKeys {
		if m.key == key {
			return true
		}
	}
	return false
}

// parseRuntimeConfigKey reads a group version key (no Resource) or a
// resource key.
func parseRuntimeConfigKey(key string) (schema.GroupVersionResource, error) {
	switch key {
	case "api/legacy", "api/v1", "v1":
		return coreV1.WithResource(""), nil
	}
	for _, prefix := range []string{"api/v1/", "v1/"} {
		if resource, ok := strings.CutPrefix(key, prefix); ok && resource != "" && !strings.Contains(resource, "/") {
			return coreV1.WithResource(resource), nil
		}
	}
	parts := strings.Split(key, "/")
	if (len(parts) == 2 || len(parts) == 3) && !slices.Contains(parts, "") {
		gvr := schema.GroupVersionResource{Group: parts[0], Version: parts[1]}
		if len(parts) == 3 {
			gvr.Resource = parts[2]
		}
		return gvr, nil
	}
	return schema.GroupVersionResource{}, fmt.Errorf("--runtime-config: invalid key %q: want api/all, api/ga, api/beta, api/alpha, api/v1, <group>/<version> or <group>/<version>/<resource>", key)
}

// notServed lists, for the start log, the group versions of which nothing
// is served (those off by default left out), then the single resources
// left out of group versions that are served.
func notServed(available []schema.GroupVersionResource, served map[schema.GroupVersionResource]bool) []string {
	var order []schema.GroupVersion
	off := map[schema.GroupVersion][]string{}
	total := map[schema.GroupVersion]int{}
	for _, gvr := range available {
		gv := gvr.GroupVersion()
		if offByDefault[gv] {
			continue
		}
		if total[gv] == 0 {
			order = append(order, gv)
		}
		total[gv]++
		if !served[gvr] {
			off[gv] = append(off[gv], gv.String()+"/"+gvr.Resource)
		}
	}
	var whole, single []string
	for _, gv := range order {
		if len(off[gv]) == total[gv] {
			whole = append(whole, gv.String())
		} else {
			single = append(single, off[gv]...)
		}
	}
	return append(whole, single...)
}
