package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cronplane/cronplane/pkg/healthz"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
)

// The health endpoints list kube-apiserver's checks under its names, for
// what cronplane has of them:
//
//	/healthz, /livez  ping, log, etcd, etcd-override-<i>...,
//	                  poststarthook/<hook>...
//	/readyz           ping, log, etcd, etcd-readiness, (etcd-override-<i>,
//	                  etcd-override-readiness-<i>)..., informer-sync,
//	                  poststarthook/<hook>..., shutdown
//
// The etcd-override checks, one pair per --etcd-servers-overrides
// cluster, are kube's from v1.33 (v1.29 checks only --etcd-servers);
// ?exclude=etcd and ?exclude=etcd-readiness leave them out too.
//
// informer-sync waits for every watch cache to be filled from etcd;
// shutdown fails from the moment the server is told to stop. On /livez
// the post-start hooks pass during --livez-grace-period.

// installHealth serves /healthz, /livez and /readyz, and one path per
// check under each, on r.
func (s *Server) installHealth(r *mux.Router) {
	for _, name := range []string{"healthz", "livez", "readyz"} {
		h := &healthz.Handler{Name: name, Checks: func() []healthz.Checker { return s.healthChecks(name) }}
		r.Handle("/"+name, h)
		r.PathPrefix("/" + name + "/").Handler(h)
	}
}

// isHealthPath reports the health endpoints and their checks, which the
// in-flight limits leave alone (kube exempts its probes).
func isHealthPath(path string) bool {
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func (s *Server) healthChecks(endpoint string) []healthz.Checker {
	l := &s.life
	checks := []healthz.Checker{healthz.Ping, l.log, healthz.Named("etcd", l.etcdHealth.check)}
	if endpoint == "readyz" {
		checks = append(checks, healthz.Named("etcd-readiness", l.etcdReady.check))
	}
	for i, p := range l.overrideHealth {
		checks = append(checks, healthz.InGroup(healthz.Named(fmt.Sprintf("etcd-override-%d", i), p.check), "etcd"))
		if endpoint == "readyz" {
			checks = append(checks, healthz.InGroup(healthz.Named(fmt.Sprintf("etcd-override-readiness-%d", i), l.overrideReady[i].check), "etcd-readiness"))
		}
	}
	if endpoint == "readyz" {
		checks = append(checks, healthz.Named("informer-sync", s.informerSync))
	}
	l.hooksMu.Lock()
	hooks := append([]*postStartHook(nil), l.hooks...)
	l.hooksMu.Unlock()
	for _, h := range hooks {
		c := healthz.Named("poststarthook/"+h.name, h.check)
		if endpoint == "livez" {
			c = healthz.Delayed(c, l.started.Add(s.opts.Serving.LivezGracePeriod))
		}
		checks = append(checks, c)
	}
	if endpoint == "readyz" {
		checks = append(checks, healthz.Named("shutdown", s.shutdownCheck))
	}
	return checks
}

// informerSync passes once every watch cache has been filled from etcd:
// until then reads would wait for it.
func (s *Server) informerSync(*http.Request) error {
	var pending []string
	if s.storage != nil {
		s.storage.eachCache(func(prefix, _ string, c *cacher.Cache) {
			if !c.Ready() {
				pending = append(pending, prefix)
			}
		})
	}
	if len(pending) == 0 {
		return nil
	}
	sort.Strings(pending)
	return fmt.Errorf("%d watch caches not synced yet: %v", len(pending), pending)
}

func (s *Server) shutdownCheck(*http.Request) error {
	select {
	case <-s.life.shutdownInitiated:
		return errors.New("process is shutting down")
	default:
		return nil
	}
}

// etcdProbe reads etcd at most once per half timeout, as kube's etcd
// checks do; checks in between get the last result, so that probes do
// not load etcd however often they come.
type etcdProbe struct {
	probe   func(ctx context.Context) error
	timeout time.Duration

	mu     sync.Mutex
	probed time.Time
	err    error
}

// probeEtcd reads a key linearizably: etcd answers only with a quorum.
func (s *Server) probeEtcd(ctx context.Context) error {
	if s.client == nil {
		return errors.New("etcd client connection not yet established")
	}
	_, err := s.client.Get(ctx, s.opts.EtcdPrefix+"/health", clientv3.WithCountOnly())
	return err
}

// addOverrideProbes checks each override cluster as probeEtcd does the
// main one, once their clients exist.
func (s *Server) addOverrideProbes() {
	o := s.opts.Serving
	for _, c := range s.etcdClusters.clients {
		probe := func(ctx context.Context) error {
			_, err := c.Get(ctx, s.opts.EtcdPrefix+"/health", clientv3.WithCountOnly())
			return err
		}
		s.life.overrideHealth = append(s.life.overrideHealth, &etcdProbe{probe: probe, timeout: o.EtcdHealthcheckTimeout})
		s.life.overrideReady = append(s.life.overrideReady, &etcdProbe{probe: probe, timeout: o.EtcdReadycheckTimeout})
	}
}

func (p *etcdProbe) check(*http.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.probed.IsZero() && time.Since(p.probed) < p.timeout/2 {
		return p.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	p.err = p.probe(ctx)
	p.probed = time.Now()
	return p.err
}

// postStartHook is work the server does once it serves, as kube's
// post-start hooks: /readyz (and /healthz, and /livez after the grace
// period) fails until it has succeeded.
type postStartHook struct {
	name string
	run  func(ctx context.Context) error
	done chan struct{}
}

func (h *postStartHook) check(*http.Request) error {
	select {
	case <-h.done:
		return nil
	default:
		return errors.New("not finished")
	}
}

// AddPostStartHook adds work to do once the server serves, checked as
// poststarthook/<name>; run is retried with a growing pause until it
// succeeds or the server stops. Hooks are added before Run.
func (s *Server) AddPostStartHook(name string, run func(ctx context.Context) error) error {
	l := &s.life
	l.hooksMu.Lock()
	defer l.hooksMu.Unlock()
	if l.hooksStarted {
		return fmt.Errorf("unable to add %q because PostStartHooks have already been executed", name)
	}
	for _, h := range l.hooks {
		if h.name == name {
			return fmt.Errorf("unable to add %q because it was already registered", name)
		}
	}
	l.hooks = append(l.hooks, &postStartHook{name: name, run: run, done: make(chan struct{})})
	return nil
}

// runPostStartHooks starts the hooks, each in its goroutine, until ctx
// ends.
func (s *Server) runPostStartHooks(ctx context.Context) {
	l := &s.life
	l.hooksMu.Lock()
	l.hooksStarted = true
	hooks := l.hooks
	l.hooksMu.Unlock()
	for _, h := range hooks {
		go func(h *postStartHook) {
			backoff := 100 * time.Millisecond
			for {
				err := h.run(ctx)
				if err == nil {
					close(h.done)
					return
				}
				if ctx.Err() != nil {
					return
				}
				s.opts.Logger.Error(err, "Post-start hook failed; retrying", "hook", h.name, "backoff", backoff)
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				if backoff < 5*time.Second {
					backoff *= 2
				}
			}
		}(h)
	}
}
