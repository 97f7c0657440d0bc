package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apiextensionsv1 "github.com/cronplane/cronplane/pkg/apis/apiextensions/v1"
	"github.com/cronplane/cronplane/pkg/registry/generic"
)

// errOverrideFormat is kube-apiserver's refusal of a malformed
// --etcd-servers-overrides entry, word for word.
var errOverrideFormat = errors.New("--etcd-servers-overrides invalid, must be of format: group/resource#servers, where servers are URLs, semicolon separated")

// etcdOverrides is --etcd-servers-overrides parsed: the etcd clusters
// other than --etcd-servers, each a distinct set of servers in the order
// the flag first names it, and the cluster each named resource is stored
// in. A resource "*" stands for its whole group, as in kube's storage
// factory; an exact entry wins over it.
type etcdOverrides struct {
	clusters   [][]string
	byResource map[schema.GroupResource]int
}

// parseEtcdOverrides reads kube's syntax: group/resource#servers, the core
// group empty (/events#...), servers semicolon separated. A resource named
// twice takes the last entry, as kube's does. kube's validation lets an
// empty server URL through; it is refused here, before anything starts.
func parseEtcdOverrides(values []string) (etcdOverrides, error) {
	o := etcdOverrides{byResource: map[schema.GroupResource]int{}}
	var errs []error
	for _, v := range values {
		resource, servers, ok := strings.Cut(v, "#")
		if !ok || strings.Contains(servers, "#") {
			errs = append(errs, errOverrideFormat)
			continue
		}
		group, name, ok := strings.Cut(resource, "/")
		if !ok || strings.Contains(name, "/") {
			errs = append(errs, errOverrideFormat)
			continue
		}
		list := strings.Split(servers, ";")
		if slices.Contains(list, "") {
			errs = append(errs, fmt.Errorf("--etcd-servers-overrides %q: an empty etcd server URL", v))
			continue
		}
		o.byResource[schema.GroupResource{Group: group, Resource: name}] = o.cluster(list)
	}
	return o, errors.Join(errs...)
}

// cluster is the index of the cluster of servers, added if new; the same
// servers in another order are the same cluster.
func (o *etcdOverrides) cluster(servers []string) int {
	key := slices.Sorted(slices.Values(servers))
	for i, c := range o.clusters {
		if slices.Equal(slices.Sorted(slices.Values(c)), key) {
			return i
		}
	}
	o.clusters = append(o.clusters, servers)
	return len(o.clusters) - 1
}

// clusterOf is the override cluster a built-in resource is stored in, if
// any. Resources that share their keys (core and events.k8s.io Events)
// are looked up as the one their objects are stored as, so that they stay
// together, as kube's cohabiting resources do: /events moves both, an
// entry for events.k8s.io/events moves neither.
func (o etcdOverrides) clusterOf(res *generic.Resource) (int, bool) {
	gr := schema.GroupResource{Group: res.StoredAs().Group, Resource: res.Plural}
	if gr.Group == apiextensionsv1.GroupName {
		// kube's apiextensions-apiserver stores CustomResourceDefinitions
		// with the storage configuration of --etcd-servers alone.
		return 0, false
	}
	if i, ok := o.byResource[gr]; ok {
		return i, true
	}
	i, ok := o.byResource[schema.GroupResource{Group: gr.Group, Resource: "*"}]
	return i, ok
}

// etcdClusters are the clients of the etcd clusters the server stores in:
// main for --etcd-servers (or the embedded etcd), one per override
// cluster. Each cluster has its own revisions: a resource's
// resourceVersions are its cluster's, and each is compacted on its own.
type etcdClusters struct {
	main      *clientv3.Client
	overrides etcdOverrides
	clients   []*clientv3.Client
}

// connectOverrides makes a client per override cluster, with the TLS
// files of --etcd-servers, as kube's storage factory copies the main
// storage configuration for each override.
func (s *Server) connectOverrides(ctx context.Context) error {
	o, err := parseEtcdOverrides(s.opts.EtcdServersOverrides)
	if err != nil {
		return err
	}
	s.etcdClusters.overrides = o
	if len(o.clusters) == 0 {
		return nil
	}
	tlsConfig, err := s.opts.EtcdTLS.clientConfig()
	if err != nil {
		return err
	}
	for _, servers := range o.clusters {
		c, err := clientv3.New(clientv3.Config{Endpoints: servers, DialTimeout: 10 * time.Second, Context: ctx, TLS: tlsConfig})
		if err != nil {
			return fmt.Errorf("connecting to etcd %v (--etcd-servers-overrides): %w", servers, err)
		}
		s.etcdClusters.clients = append(s.etcdClusters.clients, c)
	}
	s.addOverrideProbes()
	return nil
}

// clientFor is the client of the cluster a built-in resource is stored in.
func (c *etcdClusters) clientFor(res *generic.Resource) *clientv3.Client {
	if i, ok := c.overrides.clusterOf(res); ok {
		return c.clients[i]
	}
	return c.main
}

// all are the clients of every cluster, the main one first.
func (c *etcdClusters) all() []*clientv3.Client {
	return append([]*clientv3.Client{c.main}, c.clients...)
}

func (c *etcdClusters) closeOverrides() {
	for _, client := range c.clients {
		_ = client.Close()
	}
}
