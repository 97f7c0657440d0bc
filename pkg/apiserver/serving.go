package apiserver

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// ServingOptions bound the work the server takes on and say how it
// starts and stops: the in-flight limits, the request timeout, the
// health checks' grace and timeouts, and the graceful shutdown. Defaults
// are kube-apiserver's.
type ServingOptions struct {
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight cap the
	// read-only and the mutating requests served at once (429 beyond);
	// 0 lifts a cap.
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// EnablePriorityAndFairness replaces the two caps by API Priority and
	// Fairness, which shares their sum among the priority levels.
	EnablePriorityAndFairness bool
	// RequestTimeout bounds every request but watches (504 beyond).
	RequestTimeout time.Duration
	// MinRequestTimeout (seconds) bounds watches without timeoutSeconds; 0
	// ends them at once.
	MinRequestTimeout int64
	// LivezGracePeriod is how long after the start /livez does not fail
	// on unfinished post-start hooks.
	LivezGracePeriod time.Duration
	// EtcdHealthcheckTimeout and EtcdReadycheckTimeout bound the etcd
	// probes of the etcd and etcd-readiness checks.
	EtcdHealthcheckTimeout time.Duration
	EtcdReadycheckTimeout  time.Duration
	// ShutdownDelayDuration is how long the server goes on serving after
	// it was told to stop, /readyz failing, before it stops accepting
	// connections.
	ShutdownDelayDuration time.Duration
	// ShutdownWatchTerminationGracePeriod spreads the ends of the open
	// watches over that long at shutdown; 0 ends them all at once.
	ShutdownWatchTerminationGracePeriod time.Duration

	// idleTimeout closes a keep-alive connection idle that long (kube's
	// 90 s); tests shorten it.
	idleTimeout time.Duration
}

// Fixed settings of the HTTP server, as kube-apiserver sets them.
const (
	defaultIdleTimeout = 90 * time.Second
	// readHeaderTimeout bounds the wait for a request's header.
	readHeaderTimeout = 32 * time.Second
	maxHeaderBytes    = 1 << 20
)

// DefaultServingOptions are kube-apiserver's defaults.
func DefaultServingOptions() ServingOptions {
	return ServingOptions{
		MaxRequestsInFlight:         400,
		MaxMutatingRequestsInFlight: 200,
		EnablePriorityAndFairness:   true,
		RequestTimeout:              time.Minute,
		MinRequestTimeout:           1800,
		EtcdHealthcheckTimeout:      2 * time.Second,
		EtcdReadycheckTimeout:       2 * time.Second,
	}
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&o.MaxRequestsInFlight, "max-requests-inflight", o.MaxRequestsInFlight, "most read-only requests (get, list) served at once; more are answered 429 with Retry-After: 1 (watches and health checks are not counted; 0: no limit); with --enable-priority-and-fairness, this and --max-mutating-requests-inflight are summed into the server's total concurrency")
	fs.IntVar(&o.MaxMutatingRequestsInFlight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInFlight, "most mutating requests served at once; more are answered 429 with Retry-After: 1 (0: no limit); with --enable-priority-and-fairness, summed with --max-requests-inflight into the server's total concurrency")
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness, "dispatch requests by API Priority and Fairness, sharing the sum of the two in-flight limits among the priority levels; false applies the two limits as they are")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "longest time a request but a watch may take; it is answered 504 then (watches are bounded by --min-request-timeout)")
	fs.Int64Var(&o.MinRequestTimeout, "min-request-timeout", o.MinRequestTimeout, "seconds a watch without timeoutSeconds lasts at least (it lasts up to twice this); 0 ends such watches at once, as kube-apiserver v1.29 does")
	fs.DurationVar(&o.LivezGracePeriod, "livez-grace-period", o.LivezGracePeriod, "how long after the start /livez passes although post-start hooks have not finished")
	fs.DurationVar(&o.EtcdHealthcheckTimeout, "etcd-healthcheck-timeout", o.EtcdHealthcheckTimeout, "timeout of the etcd probe of the etcd health check")
	fs.DurationVar(&o.EtcdReadycheckTimeout, "etcd-readycheck-timeout", o.EtcdReadycheckTimeout, "timeout of the etcd probe of the etcd-readiness check")
	fs.DurationVar(&o.ShutdownDelayDuration, "shutdown-delay-duration", o.ShutdownDelayDuration, "on SIGTERM, how long to go on serving, /readyz failing, before no longer accepting connections (time for load balancers to notice)")
	fs.DurationVar(&o.ShutdownWatchTerminationGracePeriod, "shutdown-watch-termination-grace-period", o.ShutdownWatchTerminationGracePeriod, "at shutdown, the time over which the open watches are ended (at least 200 a second); 0 ends them all at once")
}

// Validate refuses what kube-apiserver refuses.
func (o *ServingOptions) Validate() error {
	var errs []error
	if o.LivezGracePeriod < 0 {
		errs = append(errs, errors.New("--livez-grace-period can not be a negative value"))
	}
	if o.MaxRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-requests-inflight can not be negative value"))
	}
	if o.MaxMutatingRequestsInFlight < 0 {
		errs = append(errs, errors.New("--max-mutating-requests-inflight can not be negative value"))
	}
	if o.EnablePriorityAndFairness && o.MaxRequestsInFlight+o.MaxMutatingRequestsInFlight <= 0 {
		errs = append(errs, fmt.Errorf("--max-requests-inflight=%d and --max-mutating-requests-inflight=%d must sum to a positive value when --enable-priority-and-fairness is true",
			o.MaxRequestsInFlight, o.MaxMutatingRequestsInFlight))
	}
	if o.RequestTimeout < 0 {
		errs = append(errs, errors.New("--request-timeout can not be negative value"))
	}
	if o.ShutdownDelayDuration < 0 {
		errs = append(errs, errors.New("--shutdown-delay-duration can not be negative value"))
	}
	if o.EtcdHealthcheckTimeout <= 0 {
		errs = append(errs, errors.New("--etcd-healthcheck-timeout must be greater than 0"))
	}
	if o.EtcdReadycheckTimeout <= 0 {
		errs = append(errs, errors.New("--etcd-readycheck-timeout must be greater than 0"))
	}
	if o.ShutdownWatchTerminationGracePeriod < 0 {
		errs = append(errs, errors.New("shutdown-watch-termination-grace-period, if provided, can not be a negative value"))
	}
	return errors.Join(errs...)
}

func (o *ServingOptions) idle() time.Duration {
	if o.idleTimeout > 0 {
		return o.idleTimeout
	}
	return defaultIdleTimeout
}
