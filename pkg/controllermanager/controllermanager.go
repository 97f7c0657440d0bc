// Package controllermanager runs the controllers against an apiserver,
// through its HTTP API only: each controller is a Descriptor (its name,
// the resources it needs served, how it starts); the manager reads
// discovery to decide which can run, elects a leader among several
// instances through a coordination.k8s.io Lease, and on the leader builds
// the controllers on shared informers, each with a client of its own
// (ClientBuilder), and serves /healthz and /metrics (kube's workqueue,
// REST client, leader-election and CronJob metrics; see metrics.go).
package controllermanager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/certs"
)

// ControllerManager runs the controllers against one apiserver: New
// wires it, Run runs it.
type ControllerManager struct {
	opts Options
	// controllers are the ones --controllers enables.
	controllers []Descriptor
	clients     configClientBuilder
	metrics     *managerMetrics
}

// New wires a manager from a completed configuration: the process's
// metrics and the clients of its kubeconfig. It talks to nobody yet.
func New(c CompletedConfig) (*ControllerManager, error) {
	// Before any client, queue or elector exists: client-go binds them to
	// the metrics providers of the moment.
	m, err := metricsFor(c.ShowHiddenMetricsForVersion)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %q: %w", c.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(c.APIQPS), c.APIBurst
	cfg.ContentType = c.ContentType
	return &ControllerManager{opts: c.Options, controllers: c.controllers, clients: configClientBuilder{base: cfg}, metrics: m}, nil
}

// Run asks discovery which controllers can run, serves /healthz and
// /metrics, and runs the controllers (once elected, when electing) until
// ctx ends or leadership is lost.
func (cm *ControllerManager) Run(ctx context.Context) error {
	opts, clients, m := cm.opts, cm.clients, cm.metrics
	disc, err := discovery.NewDiscoveryClientForConfig(clients.Config("controller-discovery"))
	if err != nil {
		return err
	}
	var run []Descriptor
	for _, d := range cm.controllers {
		missing, err := unserved(disc, d.Requires)
		switch {
		case err != nil:
			klog.ErrorS(err, "Discovery failed: starting the controller without knowing whether the apiserver serves its API", "controller", d.Name)
		case missing != nil:
			klog.InfoS("Controller is disabled: the apiserver does not serve its API", "controller", d.Name, "resource", path.Join(missing.GroupVersion().String(), missing.Resource))
			continue
		}
		run = append(run, d)
	}
	health := &checks{}
	if opts.SecurePort >= 0 {
		reviews, err := clients.Client("controller-manager-auth-delegator")
		if err != nil {
			return err
		}
		var profiling http.Handler
		if opts.Profiling {
			profiling = profilingHandler()
			if opts.ContentionProfiling {
				goruntime.SetBlockProfileRate(1)
			}
		}
		if err := serve(ctx, opts, endpoints(reviews, health, m.registry.Handler(), profiling)); err != nil {
			return err
		}
	}
	var controllerClients ClientBuilder = clients
	if opts.UseServiceAccountCredentials {
		if controllerClients, err = newServiceAccountClientBuilder(clients); err != nil {
			return err
		}
	}
	// A controller that fails to start ends the manager, as in kube; a
	// leader gives up its Lease first.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	failed := make(chan error, 1)
	start := func(ctx context.Context) {
		if err := runControllers(ctx, clients, controllerClients, run, opts, health, m); err != nil {
			failed <- fmt.Errorf("starting controllers: %w", err)
			cancel()
		}
	}
	if !opts.LeaderElect {
		start(ctx)
	} else if err := elect(ctx, clients, opts, start); err != nil {
		return err
	}
	select {
	case err := <-failed:
		return err
	default:
		return nil
	}
}

// runControllers builds the controllers on shared informers, starts
// them, and runs until ctx ends. The shared informers read through a
// client of root, the controllers act through clients of their own.
func runControllers(ctx context.Context, root, clients ClientBuilder, ds []Descriptor, opts Options, health *checks, m *managerMetrics) error {
	informerClient, err := root.Client("shared-informers")
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(informerClient, 0, informers.WithTransform(trimCached))
	var broadcasters []record.EventBroadcaster
	defer func() {
		for _, b := range broadcasters {
			b.Shutdown()
		}
	}()
	cc := &ControllerContext{
		Options:   opts,
		Clients:   clients,
		Informers: factory,
		metrics:   m,
		Recorder: func(controller, component string) (record.EventRecorder, error) {
			client, err := clients.Client(controller)
			if err != nil {
				return nil, err
			}
			b := record.NewBroadcaster()
			b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
			broadcasters = append(broadcasters, b)
			return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), nil
		},
	}
	var runs []func(context.Context)
	for _, d := range ds {
		run, err := d.Start(cc)
		if err != nil {
			return fmt.Errorf("controller %q: %w", d.Name, err)
		}
		runs = append(runs, run)
		health.add(d.Name)
		klog.InfoS("Started controller", "controller", d.Name)
	}
	factory.Start(ctx.Done())
	for _, r := range runs {
		go r(ctx)
	}
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// trimCached drops from cached objects what no controller reads, to save
// memory: managedFields, which an update leaves alone when it sends none.
// Jobs and Pods are kept whole otherwise: the Job controller reads a Job's
// spec, pod template and labels, and selects its pods by label, and it
// and the pod garbage collector read the pods' spec and status. Objects a
// controller writes back whole are kept whole for the same reason: a
// CronJob's status write stores its metadata too, as kube's does.
func trimCached(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// elect runs start while this instance holds the Lease. Its requests go
// through the "leader-election" client, its Events on the Lease (became
// leader, stopped leading) through the manager's own, as kube's do.
func elect(ctx context.Context, clients ClientBuilder, opts Options, start func(context.Context)) error {
	id := opts.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	// As resourcelock.NewFromKubeconfig bounds each request, but keeping
	// our User-Agent, which it would replace with client-go's default.
	cfg := clients.Config("leader-election")
	cfg.Timeout = max(opts.RenewDeadline/2, time.Second)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	eventClient, err := clients.Client(program)
	if err != nil {
		return err
	}
	events := record.NewBroadcaster()
	defer events.Shutdown()
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventClient.CoreV1().Events("")})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, opts.LeaseNamespace, opts.LeaseName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{
			Identity:      id,
			EventRecorder: events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: program}),
		})
	if err != nil {
		return err
	}
	lost := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   opts.LeaseDuration,
		RenewDeadline:   opts.RenewDeadline,
		RetryPeriod:     opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: start,
			OnStoppedLeading: func() {
				klog.InfoS("Leader election lost", "identity", id)
				close(lost)
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					klog.InfoS("New leader elected", "identity", identity)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	le.Run(ctx)
	select {
	case <-lost:
		if ctx.Err() == nil {
			return errors.New("leader election lost")
		}
	default:
	}
	return nil
}

// checks are the named health checks of /healthz: ping, and one per
// started controller, as kube lists them (/healthz?verbose, /healthz/<name>).
type checks struct {
	mu    sync.Mutex
	names []string
}

func (c *checks) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names = append(c.names, name)
}

func (c *checks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	names := append([]string{"ping"}, c.names...)
	c.mu.Unlock()
	if name := strings.TrimPrefix(r.URL.Path, "/healthz/"); name != r.URL.Path {
		if !slices.Contains(names, name) {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		_, _ = w.Write([]byte("ok"))
		return
	}
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "[+]%s ok\n", n)
	}
	b.WriteString("healthz check passed\n")
	_, _ = w.Write([]byte(b.String()))
}

// alwaysAllowedPaths are kube-controller-manager's default
// --authorization-always-allow-paths: served to anyone who reaches the
// port.
var alwaysAllowedPaths = map[string]bool{"/healthz": true, "/readyz": true, "/livez": true}

// endpoints routes what the port serves: /healthz to anyone, and to the
// callers the apiserver allows (delegatedAuth) the checks one by one at
// /healthz/<name>, /metrics, and /debug/pprof/ when profiling is not nil.
// As in kube, any path but the always-allowed ones is authorized before
// it is routed: a caller not allowed gets 403 whether the path exists or
// not, so that nobody learns the controllers' names anonymously.
func endpoints(reviews kubernetes.Interface, health *checks, metrics, profiling http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/healthz", health)
	mux.Handle("/healthz/", health)
	mux.Handle("/metrics", metrics)
	if profiling != nil {
		mux.Handle("/debug/pprof/", profiling)
	}
	authorized := delegatedAuth(reviews, mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if alwaysAllowedPaths[r.URL.Path] {
			mux.ServeHTTP(w, r)
			return
		}
		authorized.ServeHTTP(w, r)
	})
}

// serve serves handler over HTTPS, with a serving certificate of its own.
func serve(ctx context.Context, opts Options, handler http.Handler) error {
	dir, err := os.MkdirTemp("", "cronplane-controller-manager-")
	if err != nil {
		return err
	}
	files, err := certs.EnsureServing(dir, []string{opts.BindAddress})
	if err != nil {
		return err
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.SecurePort)), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		os.RemoveAll(dir)
	}()
	klog.InfoS("Serving /healthz and /metrics securely", "address", ln.Addr().String(), "profiling", opts.Profiling)
	return nil
}
