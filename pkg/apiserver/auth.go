package apiserver

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/node"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac/bootstrap"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/storage/informer"
)

// The --authorization-mode values, as kube names them.
const (
	ModeRBAC        = "RBAC"
	ModeNode        = "Node"
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
)

// validateAuthorizationModes refuses what kube refuses: no mode, an
// unknown one, or one given twice.
func validateAuthorizationModes(modes []string) error {
	if len(modes) == 0 {
		return errors.New("at least one authorization-mode must be passed")
	}
	seen := map[string]bool{}
	for _, m := range modes {
		switch m {
		case ModeRBAC, ModeNode, ModeAlwaysAllow, ModeAlwaysDeny:
		default:
			return fmt.Errorf("authorization-mode %q is not a valid mode (supported: %s, %s, %s, %s)", m, ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC)
		}
		if seen[m] {
			return fmt.Errorf("authorization-mode %q has mode specified more than once", m)
		}
		seen[m] = true
	}
	return nil
}

// clientCAs are the roots client certificates are verified against:
// --client-ca-file, or else the CA the server generated for itself (which
// signs the controller-manager's certificate); nil when there is neither.
func (s *Server) clientCAs() (*x509.CertPool, error) {
	var data []byte
	switch {
	case s.opts.ClientCAFile != "":
		var err error
		if data, err = os.ReadFile(s.opts.ClientCAFile); err != nil {
			return nil, fmt.Errorf("reading --client-ca-file: %w", err)
		}
	case s.generatedCA != nil:
		data = s.generatedCA
	default:
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("no certificates in the client CA")
	}
	return pool, nil
}

// requestAuthenticator authenticates client certificates, then bearer
// tokens, as kube's union does.
func (s *Server) requestAuthenticator(tokens authenticator.Token) (authenticator.Request, error) {
	var union authenticator.Union
	pool, err := s.clientCAs()
	if err != nil {
		return nil, err
	}
	if pool != nil {
		union = append(union, authenticator.X509{Roots: pool})
	}
	return append(union, authenticator.BearerToken{Token: tokens}), nil
}

// authorizers builds the authorizer of --authorization-mode, after
// system:masters, which is always allowed, and the rule resolver the
// rules reviews read. RBAC reads index, which startRBAC fills; Node reads
// graph, which startNodeGraph fills.
func authorizers(modes []string, index *rbac.Index, graph *node.Graph) (authorizer.Union, authorizer.RuleResolvers) {
	z := authorizer.Union{authorizer.PrivilegedGroups{user.SystemPrivileged}}
	var rules authorizer.RuleResolvers
	for _, mode := range modes {
		switch mode {
		case ModeAlwaysAllow:
			z = append(z, authorizer.AlwaysAllow{})
			rules = append(rules, authorizer.AlwaysAllow{})
		case ModeAlwaysDeny:
			z = append(z, authorizer.AlwaysDeny{})
		case ModeRBAC:
			z = append(z, rbac.Authorizer{Index: index})
			rules = append(rules, rbac.Resolver{Index: index})
		case ModeNode:
			nodes := node.Authorizer{Graph: graph, Rules: bootstrap.NodeRules()}
			z = append(z, nodes)
			rules = append(rules, nodes)
		}
	}
	return z, rules
}

// rbacResources are what the RBAC index is fed from, by kind.
var rbacResources = map[string]schema.GroupVersionResource{
	"ClusterRole":        rbacv1.SchemeGroupVersion.WithResource("clusterroles"),
	"Role":               rbacv1.SchemeGroupVersion.WithResource("roles"),
	"ClusterRoleBinding": rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"),
	"RoleBinding":        rbacv1.SchemeGroupVersion.WithResource("rolebindings"),
}

// syncTimeout bounds the wait for the first lists of what authorization
// decides from.
const syncTimeout = time.Minute

// follow feeds each handler the objects of its resource from the watch
// cache, and waits until each has had its first list. mode names the
// authorization mode that needs them.
func (s *Server) follow(ctx context.Context, mode string, feeds map[schema.GroupVersionResource]informer.Handler) error {
	var synced []chan struct{}
	for gvr, h := range feeds {
		store, ok := s.storage.store(gvr)
		if !ok {
			return fmt.Errorf("authorization mode %s needs %s served (see --runtime-config)", mode, gvr.GroupVersion())
		}
		ch := make(chan struct{})
		synced = append(synced, ch)
		go informer.Run(s.background, store.Storage, generic.StoragePrefix(s.opts.EtcdPrefix, store.Resource), h, ch)
	}
	deadline := time.After(syncTimeout)
	for _, ch := range synced {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("what authorization mode %s decides from was not read within a minute", mode)
		}
	}
	return nil
}

// startNodeGraph feeds the Node authorizer's graph the stored pods and
// persistent volumes, and waits until it holds them.
func (s *Server) startNodeGraph(ctx context.Context, graph *node.Graph) error {
	return s.follow(ctx, ModeNode, map[schema.GroupVersionResource]informer.Handler{
		corev1.SchemeGroupVersion.WithResource("pods"):              node.PodHandler{G: graph},
		corev1.SchemeGroupVersion.WithResource("persistentvolumes"): node.VolumeHandler{G: graph},
	})
}

// startRBAC feeds index from the watch caches of the RBAC resources,
// waits until it holds them all, and adds the post-start hook that
// reconciles the default policy.
func (s *Server) startRBAC(ctx context.Context, index *rbac.Index) error {
	feeds := map[schema.GroupVersionResource]informer.Handler{}
	for kind, gvr := range rbacResources {
		feeds[gvr] = index.Handler(kind)
	}
	if err := s.follow(ctx, ModeRBAC, feeds); err != nil {
		return err
	}
	// The default policy is put in place once the server serves, as kube's
	// post-start hook of that name does; /readyz waits for it.
	if err := s.AddPostStartHook("rbac/bootstrap-roles", func(ctx context.Context) error {
		if err := bootstrap.Reconcile(klog.NewContext(ctx, s.opts.Logger), rbacClient{systemClient{s.Registry}}); err != nil {
			return fmt.Errorf("reconciling the default RBAC policy: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	return nil
}

// rbacClient gives the bootstrap policy typed access to the RBAC
// resources through the system client.
type rbacClient struct{ c systemClient }

var (
	clusterRolesGVR        = rbacResources["ClusterRole"]
	clusterRoleBindingsGVR = rbacResources["ClusterRoleBinding"]
)

func (r rbacClient) GetClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
	obj, err := r.c.get(ctx, clusterRolesGVR, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRole), nil
}

func (r rbacClient) CreateClusterRole(ctx context.Context, role *rbacv1.ClusterRole) error {
	return r.c.create(ctx, clusterRolesGVR, "", role)
}

func (r rbacClient) UpdateClusterRole(ctx context.Context, role *rbacv1.ClusterRole) error {
	return r.c.update(ctx, clusterRolesGVR, "", role)
}

func (r rbacClient) GetClusterRoleBinding(ctx context.Context, name string) (*rbacv1.ClusterRoleBinding, error) {
	obj, err := r.c.get(ctx, clusterRoleBindingsGVR, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*rbacv1.ClusterRoleBinding), nil
}

func (r rbacClient) CreateClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	return r.c.create(ctx, clusterRoleBindingsGVR, "", b)
}

func (r rbacClient) UpdateClusterRoleBinding(ctx context.Context, b *rbacv1.ClusterRoleBinding) error {
	return r.c.update(ctx, clusterRoleBindingsGVR, "", b)
}

func (r rbacClient) DeleteClusterRoleBinding(ctx context.Context, name string) error {
	return r.c.delete(ctx, clusterRoleBindingsGVR, "", name)
}
