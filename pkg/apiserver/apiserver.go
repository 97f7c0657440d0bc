// Package apiserver assembles the server: it connects to etcd (or starts an
// embedded one), registers the built-in resources, and builds the handler
// chain a request walks through top to bottom:
//
//	request info → drain → deadline → authentication → priority and fairness (or in-flight limits) → authorization → router
//	router: health, version, discovery, or the resource handler
//	resource handler: negotiate → decode → store (strategy, admission, storage) → encode
//
// It holds no state that is not in etcd, so several apiservers can share one
// etcd cluster.
package apiserver

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/admission/plugin/defaulttolerations"
	"github.com/cronplane/cronplane/pkg/admission/plugin/namespacelifecycle"
	"github.com/cronplane/cronplane/pkg/admission/plugin/noderestriction"
	"github.com/cronplane/cronplane/pkg/admission/plugin/nodetaint"
	"github.com/cronplane/cronplane/pkg/admission/plugin/priority"
	saadmission "github.com/cronplane/cronplane/pkg/admission/plugin/serviceaccount"
	"github.com/cronplane/cronplane/pkg/admission/plugin/validatingadmissionpolicy"
	"github.com/cronplane/cronplane/pkg/apiextensions"
	"github.com/cronplane/cronplane/pkg/apply"
	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	nodeauthz "github.com/cronplane/cronplane/pkg/auth/authorizer/node"
	rbacauthz "github.com/cronplane/cronplane/pkg/auth/authorizer/rbac"
	"github.com/cronplane/cronplane/pkg/auth/authorizer/rbac/bootstrap"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/endpoints/discovery"
	"github.com/cronplane/cronplane/pkg/endpoints/filters"
	"github.com/cronplane/cronplane/pkg/endpoints/handlers"
	"github.com/cronplane/cronplane/pkg/endpoints/instrumentation"
	"github.com/cronplane/cronplane/pkg/endpoints/openapi"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/endpoints/responsewriters"
	"github.com/cronplane/cronplane/pkg/etcdserver"
	"github.com/cronplane/cronplane/pkg/featuregate"
	"github.com/cronplane/cronplane/pkg/kubeconfig"
	"github.com/cronplane/cronplane/pkg/metrics"
	"github.com/cronplane/cronplane/pkg/podspec"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/admissionregistration"
	apiextensionsregistry "github.com/cronplane/cronplane/pkg/registry/apiextensions"
	"github.com/cronplane/cronplane/pkg/registry/authentication"
	"github.com/cronplane/cronplane/pkg/registry/authorization"
	"github.com/cronplane/cronplane/pkg/registry/batch"
	"github.com/cronplane/cronplane/pkg/registry/coordination"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/events"
	flowcontrolregistry "github.com/cronplane/cronplane/pkg/registry/flowcontrol"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	rbacregistry "github.com/cronplane/cronplane/pkg/registry/rbac"
	"github.com/cronplane/cronplane/pkg/registry/readonly"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/etcd3"
)

// Server is an apiserver: New wires it, Run serves it.
type Server struct {
	opts   Options
	etcd   *etcdserver.Server
	client *clientv3.Client
	// etcdClusters adds to client the clusters of --etcd-servers-overrides.
	etcdClusters etcdClusters
	Registry     *registry.Registry
	// storage installs the resources the registry serves.
	storage *resourceStorage
	handler http.Handler
	// tls is the serving configuration Run listens with.
	tls      *tls.Config
	listener net.Listener
	http     *http.Server
	// URL is the server's https address, known once it listens; CAData
	// the PEM of its CA; AdminToken a token in group system:masters;
	// KubeconfigPath the admin kubeconfig Run writes.
	URL            string
	CAData         []byte
	AdminToken     string
	KubeconfigPath string
	// ControllerManagerKubeconfigPath holds the controller-manager's own
	// credentials, with controllerManagerToken when no client
	// certificate can be made for it.
	ControllerManagerKubeconfigPath string
	controllerManagerToken          string
	// listening is closed once Run listens and has written the
	// kubeconfigs.
	listening chan struct{}
	closed    chan struct{}
	// stopRequests ends long-running requests (watches) on Close.
	stopRequests context.CancelFunc
	// Metrics holds the server's metrics, served at /metrics.
	Metrics *metrics.Registry
	// auditor writes the audit log; nil when nothing is audited.
	auditor *audit.Auditor
	// generatedCA is the PEM of the CA the server made for itself, if it
	// did, in the certificate directory.
	generatedCA []byte
	// background lives as long as the server, for what runs beside the
	// requests; Close ends it.
	background     context.Context
	stopBackground context.CancelFunc
	// serviceAccounts signs and verifies service account tokens, and
	// serves issuer discovery.
	serviceAccounts *serviceAccounts
	// kubelet reaches the nodes' agents for pods/log.
	kubelet *kubeletConnector
	// life holds the post-start hooks, the health checks' state, the
	// in-flight limits and the graceful shutdown's account of requests.
	life lifecycle
}

// New wires a server from a completed configuration: etcd, certificates,
// credentials, resources, authorization and the handler chain. It does
// not listen: Run does, and runs the post-start hooks.
func New(ctx context.Context, c CompletedConfig) (s *Server, err error) {
	opts := c.Options
	ctx = klog.NewContext(ctx, opts.Logger)
	srv := &Server{opts: opts, Registry: registry.New(), listening: make(chan struct{}), closed: make(chan struct{})}
	srv.background, srv.stopBackground = context.WithCancel(context.Background())
	srv.Metrics = metrics.NewRegistry()
	if err := srv.Metrics.ShowHiddenMetricsForVersion(opts.ShowHiddenMetricsForVersion); err != nil {
		return nil, err
	}
	srv.initLifecycle()
	podspec.SetAllowPrivileged(opts.AllowPrivileged)
	s = srv
	defer func() {
		if err != nil {
			// s is nil by now: a failed start returns no server.
			srv.Close()
		}
	}()
	if srv.auditor, err = audit.New(opts.Audit, srv.Metrics); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
		return nil, err
	}
	if err := s.connectEtcd(ctx); err != nil {
		return nil, err
	}
	s.etcdClusters.main = s.client
	if err := s.connectOverrides(ctx); err != nil {
		return nil, err
	}
	s.storage = newResourceStorage(s.client, opts.EtcdPrefix, s.Registry, newStorageMetrics(s.Metrics))
	if err := s.Metrics.Register(cacheCollector{s.storage}); err != nil {
		return nil, err
	}
	// Service account tokens name accounts and secrets the registry serves.
	serviceAccounts, err := newServiceAccounts(opts.ServiceAccounts, opts.DataDir, s.Registry, opts.FeatureGates.Enabled(featuregate.ServiceAccountTokenJTI), opts.Logger)
	if err != nil {
		return nil, err
	}
	s.serviceAccounts = serviceAccounts

	tokens := authenticator.NewTokenSet()
	if opts.TokenAuthFile != "" {
		if tokens, err = authenticator.LoadTokenFile(opts.TokenAuthFile); err != nil {
			return nil, err
		}
	}
	s.AdminToken = randomToken()
	tokens.Add(s.AdminToken, &user.Info{Name: "cronplane-admin", UID: "cronplane-admin", Groups: []string{"system:masters"}})
	s.controllerManagerToken = randomToken()
	tokens.Add(s.controllerManagerToken, &user.Info{Name: "system:kube-controller-manager", UID: "system:kube-controller-manager"})
	// Bearer tokens are tried against each of these in turn. The static
	// ones name no audience: they are good for the API's.
	tokenAuth := authenticator.Tokens{authenticator.AudienceAgnostic{Token: tokens, APIAudiences: serviceAccounts.audiences}, serviceAccounts.authenticator()}

	// The authorizers read the RBAC index, which the RBAC storages' own
	// escalation checks read too; RBAC fills it once they serve. Without
	// RBAC it stays empty: nobody holds RBAC permissions to hand out.
	index := rbacauthz.NewIndex()
	graph := nodeauthz.NewGraph()
	authz, rules := authorizers(opts.AuthorizationModes, index, graph)
	escalation := &rbacregistry.Escalation{Authorizer: authz, Rules: index}
	s.kubelet = &kubeletConnector{opts: opts.KubeletClient, registry: s.Registry}
	resources := append(builtinResources(escalation, opts.FeatureGates.Enabled(featuregate.CRDValidationRatcheting), s.kubelet), serviceAccounts.resource())
	// Services and endpoints, with the ranges Services take their cluster
	// IPs and node ports from, guarded in etcd.
	serviceAlloc, services, err := serviceResources(opts)
	if err != nil {
		return nil, err
	}
	serviceAlloc.ClusterIPs.Use(s.client)
	serviceAlloc.NodePorts.Use(s.client)
	resources = append(resources, services...)
	if opts.FeatureGates.Enabled(featuregate.ValidatingAdmissionPolicy) {
		resources = append(resources, admissionregistration.PolicyResources(policyTypeChecker(s.Registry))...)
	}
	if off := notServed(availableResources(), c.served); len(off) > 0 {
		opts.Logger.Info("Not serving (--runtime-config)", "resources", off)
	}
	if err := s.installResources(resources, c.served); err != nil {
		return nil, err
	}
	if err := s.startCustomResources(); err != nil {
		return nil, err
	}
	if s.tls, err = s.tlsConfig(); err != nil {
		return nil, err
	}
	if err := s.kubelet.setTransports(opts.CertDir, s.generatedCA != nil); err != nil {
		return nil, err
	}
	authn, err := s.requestAuthenticator(tokenAuth)
	if err != nil {
		return nil, err
	}
	if s.opts.ClientCAFile != "" || s.generatedCA != nil {
		// Asked for, not required: authentication verifies what comes.
		s.tls.ClientAuth = tls.RequestClientCert
	}
	if slices.Contains(opts.AuthorizationModes, ModeRBAC) {
		if err := s.startRBAC(ctx, index); err != nil {
			return nil, err
		}
	}
	if slices.Contains(opts.AuthorizationModes, ModeNode) {
		if err := s.startNodeGraph(ctx, graph); err != nil {
			return nil, err
		}
	}
	// After the RBAC hook (if any), in kube's order.
	if err := s.addFlowControlBootstrap(); err != nil {
		return nil, err
	}
	if err := s.AddPostStartHook("start-system-namespaces-controller", s.bootstrapNamespaces(metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease)); err != nil {
		return nil, err
	}
	if err := s.AddPostStartHook("bootstrap-controller", s.startKubernetesService(serviceAlloc)); err != nil {
		return nil, err
	}
	for _, e := range append(authorization.Entries(authz, rules), authentication.Entries(tokenAuth, serviceAccounts.audiences)...) {
		// kube records who wrote a review's spec in the answer, as on
		// any create.
		e.Complete()
		if e.Fields, err = apply.NewManager(e.Schema, e.New(), e.GroupVersion().String(), nil); err != nil {
			return nil, fmt.Errorf("merge schema of %s: %w", e.GroupResource(), err)
		}
		s.Registry.Add(e)
	}
	opts.Logger.Info("Authorization", "modes", opts.AuthorizationModes)
	s.handler = s.buildChain(authn, authz)
	// Requests log through the server's logger (klog.FromContext).
	baseCtx, stop := context.WithCancel(klog.NewContext(context.Background(), opts.Logger))
	s.stopRequests = stop
	s.http = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       opts.Serving.idle(),
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
	}
	return s, nil
}

// listen binds the serving port, sets URL and writes the kubeconfigs,
// which name it.
func (s *Server) listen() error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.opts.BindAddress, strconv.Itoa(s.opts.SecurePort)))
	if err != nil {
		return err
	}
	s.listener = tls.NewListener(ln, s.tls)
	host := s.opts.BindAddress
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	s.URL = "https://" + net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	s.KubeconfigPath = filepath.Join(s.opts.DataDir, "admin.kubeconfig")
	err = kubeconfig.Write(s.KubeconfigPath, kubeconfig.Config{
		Server: s.URL, CAData: s.CAData, Token: s.AdminToken, UserName: "cronplane-admin",
	})
	if err == nil {
		err = s.writeControllerManagerKubeconfig(s.controllerManagerToken)
	}
	if err != nil {
		_ = ln.Close()
	}
	return err
}

func (s *Server) connectEtcd(ctx context.Context) error {
	if len(s.opts.EtcdServers) == 0 {
		dir := filepath.Join(s.opts.DataDir, "etcd")
		s.opts.Logger.Info("Starting embedded etcd", "dataDir", dir)
		e, err := etcdserver.Start(ctx, etcdserver.Config{DataDir: dir})
		if err != nil {
			return fmt.Errorf("embedded etcd: %w", err)
		}
		s.etcd, s.client = e, e.Client()
		return nil
	}
	tlsConfig, err := s.opts.EtcdTLS.clientConfig()
	if err != nil {
		return err
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: s.opts.EtcdServers, DialTimeout: 10 * time.Second, Context: ctx, TLS: tlsConfig})
	if err != nil {
		return fmt.Errorf("connecting to etcd %v: %w", s.opts.EtcdServers, err)
	}
	s.client = c
	return nil
}

// builtinResources are the resources the server knows; namespaces first.
// ratcheting is the CRDValidationRatcheting gate.
func builtinResources(escalation *rbacregistry.Escalation, ratcheting bool, logs core.NodeConnector) []*generic.Resource {
	resources := []*generic.Resource{core.NamespaceResource(), core.EventResource(), core.ConfigMapResource(), core.SecretResource()}
	resources = append(resources, core.WorkloadResources(logs)...)
	resources = append(resources, batch.Resources()...)
	resources = append(resources, coordination.Resources()...)
	resources = append(resources, rbacregistry.Resources(escalation)...)
	resources = append(resources, events.Resources()...)
	resources = append(resources, flowcontrolregistry.Resources()...)
	resources = append(resources, readonly.Resources()...)
	resources = append(resources, admissionregistration.WebhookResources()...)
	return append(resources, apiextensionsregistry.Resource(apiextensions.CheckSchema, ratcheting))
}

// installResources registers the served built-in resources, each stored
// in the etcd cluster --etcd-servers-overrides gives it, if any: as in
// kube, the overrides apply to built-in resources only.
func (s *Server) installResources(resources []*generic.Resource, served map[schema.GroupVersionResource]bool) error {
	for _, res := range resources {
		if !served[res.GroupVersionResource()] {
			continue
		}
		if err := s.storage.installIn(res, s.etcdClusters.clientFor(res)); err != nil {
			return err
		}
	}
	return nil
}

// InstallResource serves res from now on (see resourceStorage.install).
func (s *Server) InstallResource(res *generic.Resource) error { return s.storage.install(res) }

// install serves res from now on, replacing what served its
// group, version and resource: a generic store over its watch cache, and
// the field manager of its schema. A resource defined at run time (its
// New returning *unstructured.Unstructured, its schema given) is served
// as a built-in one is.
func (r *resourceStorage) install(res *generic.Resource) error { return r.installIn(res, r.client) }

// installIn is install with res stored in the etcd cluster of client.
func (r *resourceStorage) installIn(res *generic.Resource, client *clientv3.Client) error {
	res.Complete()
	res.StorageVersionHash = discovery.StorageVersionHash(res.StoredAs())
	fields, err := apply.NewManager(res.Schema, res.New(), res.GroupVersion().String(), resetFields(res))
	if err != nil {
		return fmt.Errorf("merge schema of %s: %w", res.GroupResource(), err)
	}
	store := generic.NewStore(res, r.storageFor(res, client), r.prefix)
	r.mu.Lock()
	r.stores[res.GroupVersionResource()] = store
	r.mu.Unlock()
	main, subresources := store.Storages()
	r.registry.Add(&registry.Entry{Resource: &res.Resource, Storage: main, Subresources: subresources, Fields: fields})
	return nil
}

// resetFields are the top-level fields of the resource's schema that each
// endpoint ("" for the main resource) keeps from the stored object, as
// its strategy reports them: the field manager lets nobody own them there.
func resetFields(res *generic.Resource) map[string][]string {
	reset := map[string][]string{}
	add := func(endpoint string, st generic.Strategy) {
		r, ok := st.(generic.FieldResetter)
		if !ok {
			return
		}
		for _, f := range res.Schema.TopLevelFields() {
			if r.ResetsField(f) {
				reset[endpoint] = append(reset[endpoint], f)
			}
		}
	}
	add("", res.Strategy)
	for name, st := range res.Subresources {
		add(name, st)
	}
	return reset
}

// admissionChain is the admission chain, in order: the one place where
// plugins are added. authz answers the authorization checks of
// admission policies.
func (s *Server) admissionChain(authz authorizer.Authorizer) admission.Chain {
	chain := admission.Chain{
		namespacelifecycle.New(namespaceGetter{s.Registry}),
		saadmission.New(serviceAccountGetter{s.Registry}),
		noderestriction.New(podNodeGetter{s.Registry}),
		defaulttolerations.Plugin{NotReadySeconds: s.opts.Admission.DefaultNotReadyTolerationSeconds, UnreachableSeconds: s.opts.Admission.DefaultUnreachableTolerationSeconds},
		priority.Plugin{},
		nodetaint.Plugin{},
	}
	// As in kube: mutating webhooks after the built-in plugins, then
	// validating admission policies, then validating webhooks.
	mutating, validating := s.webhookPlugins()
	chain = append(chain, mutating)
	if s.opts.FeatureGates.Enabled(featuregate.ValidatingAdmissionPolicy) {
		chain = append(chain, validatingadmissionpolicy.New(policySource{s.Registry}, authz))
	}
	chain = append(chain, validating)
	return append(chain, s.opts.Admission.Plugins...)
}

// storageFor returns the watch cache over the etcd cluster of client of a
// resource's storage; resources stored under the same keys (the two event
// APIs) share one, and so one cluster.
func (r *resourceStorage) storageFor(res *generic.Resource, client *clientv3.Client) storage.Interface {
	codec := res.StorageCodec()
	newFunc := func() runtime.Object {
		obj := res.New()
		obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind)
		return obj
	}
	if conv := res.Conversion; conv != nil {
		newFunc = func() runtime.Object {
			obj, _ := conv.ToStorage(res.New())
			return obj
		}
	}
	prefix := generic.StoragePrefix(r.prefix, res)
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.caches[prefix]; ok {
		return c
	}
	backend := etcd3.New(client, codec, newFunc)
	resource := res.GroupResource().String()
	backend.Observe(r.metrics.observer(resource))
	c := cacher.New(backend, prefix, newFunc, cacher.Config{})
	backend.UseDecoded(c)
	r.caches[prefix] = c
	r.cacheResources[prefix] = resource
	return c
}

// serviceAccountGetter reads service accounts through whatever serves
// them.
type serviceAccountGetter struct{ registry *registry.Registry }

func (g serviceAccountGetter) GetServiceAccount(ctx context.Context, namespace, name string, live bool) (*corev1.ServiceAccount, error) {
	e, ok := g.registry.Lookup(corev1.SchemeGroupVersion.WithResource("serviceaccounts"))
	if !ok {
		return nil, fmt.Errorf("serviceaccounts are not served")
	}
	opts := &metav1.GetOptions{ResourceVersion: "0"}
	if live {
		opts.ResourceVersion = ""
	}
	obj, err := e.Storage.(rest.Getter).Get(ctx, namespace, name, opts)
	if err != nil {
		return nil, err
	}
	return storage.Unwrap(obj).(*corev1.ServiceAccount), nil
}

// podNodeGetter reads pods and nodes from the watch cache, for
// NodeRestriction.
type podNodeGetter struct{ registry *registry.Registry }

func (g podNodeGetter) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := cachedGet(ctx, g.registry, corev1.SchemeGroupVersion.WithResource("pods"), namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (g podNodeGetter) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	obj, err := cachedGet(ctx, g.registry, corev1.SchemeGroupVersion.WithResource("nodes"), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// cachedGet reads an object from the watch cache of whatever serves it.
func cachedGet(ctx context.Context, r *registry.Registry, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	e, ok := r.Lookup(gvr)
	if !ok {
		return nil, fmt.Errorf("%s are not served", gvr.Resource)
	}
	obj, err := e.Storage.(rest.Getter).Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	return storage.Unwrap(obj), nil
}

// namespaceGetter reads namespaces through whatever serves them.
type namespaceGetter struct{ registry *registry.Registry }

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

func (g namespaceGetter) GetNamespace(ctx context.Context, name string, live bool) (*corev1.Namespace, error) {
	e, ok := g.registry.Lookup(namespacesGVR)
	if !ok {
		return nil, fmt.Errorf("namespaces are not served")
	}
	opts := &metav1.GetOptions{ResourceVersion: "0"}
	if live {
		opts.ResourceVersion = ""
	}
	obj, err := e.Storage.(rest.Getter).Get(ctx, "", name, opts)
	if err != nil {
		return nil, err
	}
	return storage.Unwrap(obj).(*corev1.Namespace), nil
}

// bootstrapNamespaces creates the system namespaces every cluster has,
// as kube-apiserver's post-start hook start-system-namespaces-controller
// does (default comes with the kubernetes Service, in
// bootstrap-controller).
func (s *Server) bootstrapNamespaces(names ...string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		return s.createNamespaces(ctx, names)
	}
}

func (s *Server) createNamespaces(ctx context.Context, names []string) error {
	e, _ := s.Registry.Lookup(namespacesGVR)
	for _, name := range names {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		e.Defaults(ns)
		if err := e.Fields.Update(nil, ns, "kube-apiserver", "", time.Now()); err != nil {
			return err
		}
		if _, err := e.Storage.(rest.Creater).Create(ctx, "", ns, nil, &metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// resourcesFirst sends the requests their RequestInfo names resource
// requests straight to resources, without matching the router's regular
// expressions, which cost a get about 4% of its time; the router serves
// the rest.
func resourcesFirst(resources, router http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A path that does not start /api/ or /apis/ (//api/v1/...) names
		// a resource to RequestInfo, but kube's router has no route for it.
		if info, ok := request.RequestInfoFrom(r.Context()); ok && info.IsResourceRequest && strings.HasPrefix(r.URL.Path, "/"+info.APIPrefix+"/") {
			resources.ServeHTTP(w, r)
			return
		}
		router.ServeHTTP(w, r)
	})
}

func (s *Server) buildChain(authn authenticator.Request, authz authorizer.Authorizer) http.Handler {
	var requestMetrics *instrumentation.Metrics
	if s.opts.RequestMetrics {
		requestMetrics = instrumentation.New(s.Metrics, s.Registry.Serves)
	}
	resources := &handlers.Handler{Registry: s.Registry, Admission: s.admissionChain(authz), MinRequestTimeout: s.opts.Serving.MinRequestTimeout, FeatureGates: s.opts.FeatureGates, Authorizer: authz, Metrics: requestMetrics}
	disc := &discovery.Handler{Registry: s.Registry}
	// Paths are taken as sent: an unclean path is not redirected (a client
	// following the redirect could turn DELETE .../cronjobs/. into a
	// deletecollection); the resource handler refuses bad names instead.
	r := mux.NewRouter().SkipClean(true)
	// Like kube, the health, group-list and OpenAPI endpoints answer any
	// method; /version and the version documents only GET.
	s.installHealth(r)
	r.Handle("/metrics", getOnly(s.Metrics.Handler().ServeHTTP))
	if s.opts.Profiling {
		installProfiling(r)
	}
	s.installPriorityAndFairnessDebug(r)
	s.serviceAccounts.installIssuerDiscovery(r, func() string { return s.URL }, s.opts.Logger)
	// As kube's, /version and the discovery documents answer with a
	// trailing slash too (the e2e Discovery spec reads /apis/).
	withSlash := func(path string, h http.HandlerFunc) {
		r.HandleFunc(path, h)
		r.HandleFunc(path+"/", h)
	}
	withSlash("/version", getOnly(disc.ServeVersion))
	withSlash("/api", getOnly(disc.ServeLegacy))
	withSlash("/api/v1", getOnly(func(w http.ResponseWriter, r *http.Request) {
		disc.ServeResources(w, r, schema.GroupVersion{Version: "v1"})
	}))
	withSlash("/apis", disc.ServeGroups)
	withSlash("/apis/{group}", func(w http.ResponseWriter, r *http.Request) {
		disc.ServeGroup(w, r, mux.Vars(r)["group"])
	})
	withSlash("/apis/{group}/{version}", getOnly(func(w http.ResponseWriter, r *http.Request) {
		v := mux.Vars(r)
		disc.ServeResources(w, r, schema.GroupVersion{Group: v["group"], Version: v["version"]})
	}))
	oapi := &openapi.Handler{Registry: s.Registry}
	r.HandleFunc("/openapi/v2", oapi.ServeV2)
	r.HandleFunc("/openapi/v3", oapi.ServeV3Index)
	r.PathPrefix("/openapi/v3/").HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		oapi.ServeV3(w, r, strings.TrimPrefix(r.URL.Path, "/openapi/v3/"))
	})
	r.PathPrefix("/api/").Handler(resources)
	r.PathPrefix("/apis/").Handler(resources)
	// Outside the APIs, kube's fallback handler answers a plain 404.
	r.NotFoundHandler = http.HandlerFunc(responsewriters.WritePlainNotFound)

	h := resourcesFirst(resources, r)
	if !s.opts.FeatureGates.Enabled(featuregate.APIResponseCompression) {
		h = withoutCompression(h)
	}
	h = filters.WithAuthorization(h, authz)
	if s.life.apf != nil {
		h = s.life.apf.Handler(h)
	} else {
		h = s.life.inflight.Handler(h)
	}
	h = filters.WithImpersonation(h, authz)
	h = filters.WithAudit(h, s.auditor, isLongRunning)
	h = filters.WithAuthentication(h, authn, s.opts.AnonymousAuth)
	// As in kube, the deadline covers authentication too, and a bad
	// ?timeout is a 400 before it.
	h = filters.WithRequestDeadline(h, s.opts.Serving.RequestTimeout, isLongRunning, s.life.terminations)
	h = s.life.drain.Handler(h, isLongRunning)
	if requestMetrics != nil {
		h = requestMetrics.WithRequestMetrics(h)
	}
	h = filters.WithLogging(h, s.opts.Logger)
	h = filters.WithCacheControl(h)
	h = request.WithRequestInfoFilter(h)
	return filters.WithAuditInit(withPanicRecovery(h), s.auditor)
}

// isLongRunning reports the requests no request timeout applies to:
// watches and, as kube's, the subresources that stream or connect (a
// pod's log, which may follow it, exec, attach, port-forward, proxy).
func isLongRunning(r *http.Request) bool {
	info, ok := request.RequestInfoFrom(r.Context())
	if !ok {
		return false
	}
	switch {
	case info.Verb == "watch" || info.Verb == "proxy":
		return true
	case !info.IsResourceRequest:
		return false
	}
	switch info.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return true
	}
	return false
}

// getOnly answers kube's 405 to any method but GET.
func getOnly(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			responsewriters.WriteError(w, r, handlers.ErrMethodNotAllowed())
			return
		}
		next(w, r)
	}
}

// withoutCompression hides the client's Accept-Encoding, so that no
// response is compressed (feature gate APIResponseCompression off).
func withoutCompression(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Accept-Encoding")
		next.ServeHTTP(w, r)
	})
}

func withPanicRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logPanic(r, v)
				// kube's answer: the reason goes to the log only.
				http.Error(w, "This request caused apiserver to panic. Look in the logs for details.", http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tlsConfig() (*tls.Config, error) {
	certFile, keyFile := s.opts.TLSCertFile, s.opts.TLSPrivateKeyFile
	if certFile == "" || keyFile == "" {
		dir := s.opts.CertDir
		var hosts []string
		if s.opts.BindAddress != "" {
			hosts = append(hosts, s.opts.BindAddress)
		}
		files, err := certs.EnsureServing(dir, hosts)
		if err != nil {
			return nil, fmt.Errorf("serving certificate: %w", err)
		}
		certFile, keyFile = files.CertFile, files.KeyFile
		if s.CAData, err = os.ReadFile(files.CAFile); err != nil {
			return nil, err
		}
		s.generatedCA = s.CAData
	} else if data, err := os.ReadFile(certFile); err == nil {
		// Without a CA of our own, the kubeconfig trusts the serving chain.
		s.CAData = data
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading serving certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}, nil
}

// Run listens, writes the kubeconfigs (Listening is closed then), runs
// the post-start hooks and answers requests until ctx ends, then shuts
// down gracefully (see terminate) and closes the server; or until Close
// is called.
func (s *Server) Run(ctx context.Context) error {
	if err := s.listen(); err != nil {
		return err
	}
	s.opts.Logger.Info("apiserver ready", "url", s.URL, "kubeconfig", s.KubeconfigPath)
	close(s.listening)
	terminated := s.terminateOn(ctx)
	if s.opts.CompactionInterval > 0 {
		compactCtx, stop := context.WithCancel(ctx)
		defer stop()
		// Each cluster has its own revisions to compact.
		for _, c := range s.etcdClusters.all() {
			go etcd3.NewCompactor(c, s.opts.CompactionInterval).Run(klog.NewContext(compactCtx, s.opts.Logger))
		}
	}
	returnCtx, stopReturning := context.WithCancel(ctx)
	defer stopReturning()
	go s.returnMemory(klog.NewContext(returnCtx, s.opts.Logger))
	s.opts.Logger.Info("Serving securely", "url", s.URL)
	s.startLifecycle()
	err := s.http.Serve(s.listener)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	} else {
		s.Close()
	}
	<-terminated
	s.Close()
	return err
}

// Listening is closed once Run listens: URL is set and the kubeconfigs
// are written.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// EtcdClient is the server's etcd client, for tests and tools.
func (s *Server) EtcdClient() *clientv3.Client { return s.client }

// Close stops serving and releases etcd.
func (s *Server) Close() {
	select {
	case <-s.closed:
		return
	default:
		close(s.closed)
	}
	if s.stopRequests != nil {
		s.stopRequests()
	}
	if s.stopBackground != nil {
		s.stopBackground()
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.http.Shutdown(ctx)
		cancel()
	}
	s.auditor.Close()
	if s.storage != nil {
		s.storage.stop()
	}
	s.etcdClusters.closeOverrides()
	if s.etcd != nil {
		_ = s.etcd.Close()
	} else if s.client != nil {
		_ = s.client.Close()
	}
}

func randomToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// writeControllerManagerKubeconfig gives the controller-manager its own
// identity, system:kube-controller-manager: a client certificate from the
// server's CA when the server made one and verifies client certificates
// with it (it then works against every apiserver sharing that CA), else
// a token of this server's: a --client-ca-file replaces that CA.
func (s *Server) writeControllerManagerKubeconfig(token string) error {
	s.ControllerManagerKubeconfigPath = filepath.Join(s.opts.DataDir, "controller-manager.kubeconfig")
	cfg := kubeconfig.Config{Server: s.URL, CAData: s.CAData, Token: token, UserName: bootstrap.ControllerManagerUser}
	if s.generatedCA != nil && s.opts.ClientCAFile == "" {
		files, err := certs.EnsureClient(s.opts.CertDir, "controller-manager", bootstrap.ControllerManagerUser, nil)
		if err != nil {
			return err
		}
		if cfg.ClientCertData, err = os.ReadFile(files.CertFile); err != nil {
			return err
		}
		if cfg.ClientKeyData, err = os.ReadFile(files.KeyFile); err != nil {
			return err
		}
		cfg.Token = ""
	}
	return kubeconfig.Write(s.ControllerManagerKubeconfigPath, cfg)
}
