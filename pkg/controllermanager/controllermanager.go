// Package controllermanager runs the controllers against an apiserver,
// through its HTTP API only: it reads discovery to decide which
// controllers can run, elects a leader among several instances through a
// coordination.k8s.io Lease, starts shared informers and the controllers
// on the leader, and serves /healthz and /metrics.
package controllermanager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/certs"
	"github.com/cronplane/cronplane/pkg/controller/cronjob"
	"github.com/cronplane/cronplane/pkg/controller/garbagecollector"
	"github.com/cronplane/cronplane/pkg/controller/namespace"
)

// Options are the controller-manager's settings; cmd/controller-manager
// binds them to flags.
type Options struct {
	Kubeconfig string
	// Controllers lists controllers to run: "*" for all, "name" to add
	// one, "-name" to leave one out.
	Controllers            []string
	LeaderElect            bool
	LeaseDuration          time.Duration
	RenewDeadline          time.Duration
	RetryPeriod            time.Duration
	LeaseNamespace         string
	LeaseName              string
	ConcurrentCronJobSyncs int
	ConcurrentGCSyncs      int
	// GCResync is how often the garbage collector reads discovery again
	// to watch resources served since it started.
	GCResync    time.Duration
	BindAddress string
	// SecurePort serves /healthz and /metrics over HTTPS; 0 picks a free
	// port, -1 serves nothing.
	SecurePort int
	// Clock overrides the cronjob controller's clock (tests).
	Clock cronjob.Clock
	// Identity names this instance in the Lease; empty means hostname_uuid.
	Identity string
	// APIQPS and APIBurst bound the requests to the apiserver.
	APIQPS   int
	APIBurst int
}

// DefaultOptions are kube's defaults.
func DefaultOptions() Options {
	return Options{
		Controllers:            []string{"*"},
		LeaderElect:            true,
		LeaseDuration:          15 * time.Second,
		RenewDeadline:          10 * time.Second,
		RetryPeriod:            2 * time.Second,
		LeaseNamespace:         "kube-system",
		LeaseName:              "kube-controller-manager",
		ConcurrentCronJobSyncs: 5,
		ConcurrentGCSyncs:      20,
		GCResync:               30 * time.Second,
		BindAddress:            "127.0.0.1",
		SecurePort:             10257,
		APIQPS:                 1000,
		APIBurst:               2000,
	}
}

// Known controllers and the resources each needs served.
var known = map[string][]string{
	"cronjob":          {"batch/v1/cronjobs", "batch/v1/jobs"},
	"garbagecollector": nil,
	"namespace":        {"v1/namespaces"},
}

// enabled resolves --controllers.
func enabled(list []string) (map[string]bool, error) {
	on := map[string]bool{}
	for _, c := range list {
		switch {
		case c == "*":
			for name := range known {
				if !contains(list, "-"+name) {
					on[name] = true
				}
			}
		case strings.HasPrefix(c, "-"):
			if _, ok := known[c[1:]]; !ok {
				return nil, fmt.Errorf("unknown controller %q", c[1:])
			}
			delete(on, c[1:])
		default:
			if _, ok := known[c]; !ok {
				return nil, fmt.Errorf("unknown controller %q", c)
			}
			on[c] = true
		}
	}
	return on, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Run runs until ctx ends or leadership is lost.
func Run(ctx context.Context, opts Options) error {
	on, err := enabled(opts.Controllers)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %q: %w", opts.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(opts.APIQPS), opts.APIBurst
	cfg.UserAgent = "cronplane-controller-manager"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for name := range on {
		if missing := unserved(client, known[name]); missing != "" {
			klog.Infof("controller %q is disabled: the apiserver does not serve %s", name, missing)
			delete(on, name)
		}
	}
	health := &checks{}
	if opts.SecurePort >= 0 {
		if err := serveHealth(ctx, opts, health); err != nil {
			return err
		}
	}
	start := func(ctx context.Context) { runControllers(ctx, clients{client, dyn, mc}, on, opts, health) }
	if !opts.LeaderElect {
		start(ctx)
		return nil
	}
	return elect(ctx, cfg, opts, start)
}

// unserved returns the first of the resources (group/version/resource)
// discovery does not list, or "".
func unserved(client kubernetes.Interface, resources []string) string {
	for _, gvr := range resources {
		i := strings.LastIndex(gvr, "/")
		list, err := client.Discovery().ServerResourcesForGroupVersion(gvr[:i])
		if err != nil {
			return gvr
		}
		found := false
		for _, r := range list.APIResources {
			if r.Name == gvr[i+1:] {
				found = true
			}
		}
		if !found {
			return gvr
		}
	}
	return ""
}

type clients struct {
	typed    kubernetes.Interface
	dynamic  dynamic.Interface
	metadata metadata.Interface
}

func runControllers(ctx context.Context, cs clients, on map[string]bool, opts Options, health *checks) {
	client := cs.typed
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(trimCached))
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	var runs []func()
	if on["cronjob"] {
		recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "cronjob-controller"})
		c := cronjob.New(client, factory.Batch().V1().CronJobs(), factory.Batch().V1().Jobs(), recorder, opts.Clock)
		runs = append(runs, func() { c.Run(ctx, opts.ConcurrentCronJobSyncs) })
		health.add("cronjob")
		klog.Info("started controller cronjob")
	}
	if on["namespace"] {
		c := namespace.New(client, cs.dynamic, factory.Core().V1().Namespaces())
		runs = append(runs, func() { c.Run(ctx, 2) })
		health.add("namespace")
		klog.Info("started controller namespace")
	}
	if on["garbagecollector"] {
		c := garbagecollector.New(cs.metadata, client.Discovery())
		runs = append(runs, func() { c.Run(ctx, opts.ConcurrentGCSyncs, opts.GCResync) })
		health.add("garbagecollector")
		klog.Info("started controller garbagecollector")
	}
	factory.Start(ctx.Done())
	for _, r := range runs {
		go r()
	}
	<-ctx.Done()
	factory.Shutdown()
}

// trimCached drops from cached objects what no controller reads, to save
// memory: managedFields everywhere, and a CronJob's own labels and
// annotations (the controller copies those of its Job template; its status
// writes keep the stored metadata, as the status subresource does in kube).
func trimCached(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	if cj, ok := obj.(*batchv1.CronJob); ok {
		cj.Labels, cj.Annotations = nil, nil
	}
	return obj, nil
}

// elect runs start while this instance holds the Lease.
func elect(ctx context.Context, cfg *rest.Config, opts Options, start func(context.Context)) error {
	id := opts.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + uuid.NewString()
	}
	lock, err := resourcelock.NewFromKubeconfig(resourcelock.LeasesResourceLock, opts.LeaseNamespace, opts.LeaseName,
		resourcelock.ResourceLockConfig{Identity: id}, cfg, opts.RenewDeadline)
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
				klog.Infof("%s: leader election lost", id)
				close(lost)
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					klog.Infof("new leader elected: %s", identity)
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
		if !contains(names, name) {
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

func serveHealth(ctx context.Context, opts Options, health *checks) error {
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
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/healthz", health)
	mux.Handle("/healthz/", health)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ln, err := tls.Listen("tcp", net.JoinHostPort(opts.BindAddress, strconv.Itoa(opts.SecurePort)), &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
		os.RemoveAll(dir)
	}()
	klog.Infof("serving /healthz and /metrics on https://%s", ln.Addr())
	return nil
}
