// Package kubernetesservice keeps the default/kubernetes Service and its
// Endpoints, through which clients in a cluster find the apiservers, as
// kube-apiserver's lease endpoint reconciler does: each apiserver holds a
// lease in etcd (a key under masterleases/ named by its advertised address,
// bound to an etcd lease of TTL seconds) and renews it every Interval; the
// Endpoints list the addresses of the live leases, so an apiserver that
// stops leaves them when its lease ends (at once when it stops cleanly).
// The Service gets the first address of the service cluster IP range.
// Options also holds the flags of the ranges Services take their cluster
// IPs and node ports from.
package kubernetesservice

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
)

// Kube's values: the Service's name and namespace, its port, and the
// lease reconciler's TTL and renewal interval.
const (
	Name      = "kubernetes"
	Namespace = metav1.NamespaceDefault
	portName  = "https"
	port      = 443
	// DefaultTTL and DefaultInterval are kube's lease TTL and renewal
	// period.
	DefaultTTL      = 15 * time.Second
	DefaultInterval = 10 * time.Second
)

// Options are the flags of the service ranges and of the address the
// apiserver advertises.
type Options struct {
	// ServiceClusterIPRange is the CIDR Services' cluster IPs come from.
	ServiceClusterIPRange string
	// ServiceNodePortRange is "first-last", the node ports' range.
	ServiceNodePortRange string
	// AdvertiseAddress is the address listed in the kubernetes
	// Endpoints; empty means the bind address (127.0.0.1 when that is
	// unspecified).
	AdvertiseAddress string
}

// DefaultOptions are kube's defaults.
func DefaultOptions() Options {
	return Options{ServiceClusterIPRange: "10.0.0.0/24", ServiceNodePortRange: "30000-32767"}
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ServiceClusterIPRange, "service-cluster-ip-range", o.ServiceClusterIPRange, "CIDR from which Services get their cluster IPs; the kubernetes Service gets its first address")
	fs.StringVar(&o.ServiceNodePortRange, "service-node-port-range", o.ServiceNodePortRange, "range of ports (first-last, inclusive) NodePort and LoadBalancer Services get their node ports from")
	fs.StringVar(&o.AdvertiseAddress, "advertise-address", o.AdvertiseAddress, "IP address listed in the kubernetes Endpoints for this apiserver (default: --bind-address, or 127.0.0.1 when that is unspecified)")
}

// Validate reports the ranges and the address that do not parse.
func (o Options) Validate() error {
	_, errRange := o.ClusterIPRange()
	_, _, errPorts := o.NodePortRange()
	var errAddr error
	if o.AdvertiseAddress != "" {
		_, errAddr = o.Advertised("")
	}
	return errors.Join(errRange, errPorts, errAddr)
}

// ClusterIPRange parses ServiceClusterIPRange.
func (o Options) ClusterIPRange() (*net.IPNet, error) {
	_, cidr, err := net.ParseCIDR(o.ServiceClusterIPRange)
	if err != nil {
		return nil, fmt.Errorf("--service-cluster-ip-range: %w", err)
	}
	if ones, bits := cidr.Mask.Size(); bits-ones < 2 {
		return nil, fmt.Errorf("--service-cluster-ip-range %s holds no address for a Service", o.ServiceClusterIPRange)
	}
	return cidr, nil
}

// NodePortRange parses ServiceNodePortRange into its first port and size.
func (o Options) NodePortRange() (first, size int, err error) {
	lo, hi, ok := strings.Cut(o.ServiceNodePortRange, "-")
	a, errA := strconv.Atoi(strings.TrimSpace(lo))
	b, errB := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || errA != nil || errB != nil || a < 1 || b > 65535 || b < a {
		return 0, 0, fmt.Errorf("--service-node-port-range %q: want first-last, within 1-65535", o.ServiceNodePortRange)
	}
	return a, b - a + 1, nil
}

// Advertised is the address the apiserver advertises, given its bind
// address.
func (o Options) Advertised(bindAddress string) (net.IP, error) {
	addr := o.AdvertiseAddress
	if addr == "" {
		addr = bindAddress
	}
	ip := net.ParseIP(addr)
	if ip == nil {
		return nil, fmt.Errorf("--advertise-address %q is not an IP address", addr)
	}
	if ip.IsUnspecified() {
		ip = hostIP()
	}
	return ip, nil
}

// hostIP is the address kube-apiserver advertises when bound to all
// interfaces: the IPv4 address of the interface of the default route,
// else of the first interface that has a global one, else loopback.
func hostIP() net.IP {
	if data, err := os.ReadFile("/proc/net/route"); err == nil {
		for _, line := range strings.Split(string(data), "\n")[1:] {
			// Iface Destination Gateway ...: the default route goes to
			// destination 00000000.
			if f := strings.Fields(line); len(f) > 1 && f[1] == "00000000" {
				if iface, err := net.InterfaceByName(f[0]); err == nil {
					if ip := globalIPv4(*iface); ip != nil {
						return ip
					}
				}
			}
		}
	}
	if ifaces, err := net.Interfaces(); err == nil {
		for _, iface := range ifaces {
			if ip := globalIPv4(iface); ip != nil {
				return ip
			}
		}
	}
	return net.IPv4(127, 0, 0, 1)
}

func globalIPv4(iface net.Interface) net.IP {
	if iface.Flags&net.FlagUp == 0 {
		return nil
	}
	addrs, err := iface.Addrs()
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.To4()
		}
	}
	return nil
}

// Client reads and writes the kubernetes Service and Endpoints.
type Client interface {
	GetService(ctx context.Context, namespace, name string) (*corev1.Service, error)
	CreateService(ctx context.Context, svc *corev1.Service) error
	UpdateService(ctx context.Context, svc *corev1.Service) error
	GetEndpoints(ctx context.Context, namespace, name string) (*corev1.Endpoints, error)
	CreateEndpoints(ctx context.Context, ep *corev1.Endpoints) error
	UpdateEndpoints(ctx context.Context, ep *corev1.Endpoints) error
}

// Reconciler keeps the kubernetes Service and Endpoints for one apiserver.
type Reconciler struct {
	Client Client
	Etcd   *clientv3.Client
	// LeasePrefix is where the leases are kept, such as
	// "/registry/masterleases/".
	LeasePrefix string
	// IP and Port are this apiserver's advertised address and secure port.
	IP   net.IP
	Port int
	// ServiceIP is the Service's cluster IP.
	ServiceIP string
	// TTL and Interval: see DefaultTTL and DefaultInterval.
	TTL, Interval time.Duration
}

// Start puts the Service in place and holds this apiserver's lease; it
// fails only when the Service cannot be written. The lease is renewed in
// the background until ctx ends, when it is given up.
func (r *Reconciler) Start(ctx context.Context) error {
	if err := r.ensureService(ctx); err != nil {
		return err
	}
	var lastErr string
	r.logSync(ctx, &lastErr)
	go r.run(ctx, lastErr)
	return nil
}

// logSync syncs and logs a failure unless it is the last one again: an
// apiserver that advertises a loopback address, which Endpoints refuse as
// kube's do, says so once instead of every Interval.
func (r *Reconciler) logSync(ctx context.Context, lastErr *string) {
	err := r.Sync(ctx)
	switch {
	case err == nil:
		*lastErr = ""
	case ctx.Err() != nil:
	case err.Error() != *lastErr:
		*lastErr = err.Error()
		klog.FromContext(ctx).Error(err, "Reconciling the kubernetes Endpoints")
	}
}

func (r *Reconciler) run(ctx context.Context, lastErr string) {
	t := time.NewTicker(r.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			stopCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if err := r.Stop(stopCtx); err != nil {
				klog.FromContext(ctx).V(2).Info("Leaving the kubernetes Endpoints", "err", err)
			}
			return
		case <-t.C:
			if err := r.ensureService(ctx); err != nil && ctx.Err() == nil {
				klog.FromContext(ctx).Error(err, "Reconciling the kubernetes Service")
			}
			r.logSync(ctx, &lastErr)
		}
	}
}

func (r *Reconciler) leaseKey() string { return r.LeasePrefix + r.IP.String() }

// Sync renews this apiserver's lease and writes the Endpoints of the live
// leases.
func (r *Reconciler) Sync(ctx context.Context) error {
	lease, err := r.Etcd.Grant(ctx, int64(r.TTL/time.Second))
	if err != nil {
		return err
	}
	if _, err := r.Etcd.Put(ctx, r.leaseKey(), strconv.Itoa(r.Port), clientv3.WithLease(lease.ID)); err != nil {
		return err
	}
	return r.reconcileEndpoints(ctx)
}

// Stop gives up this apiserver's lease and leaves the Endpoints.
func (r *Reconciler) Stop(ctx context.Context) error {
	if _, err := r.Etcd.Delete(ctx, r.leaseKey()); err != nil {
		return err
	}
	return r.reconcileEndpoints(ctx)
}

// reconcileEndpoints lists the live leases' addresses, sorted, with this
// apiserver's port, as kube's reconciler writes them.
func (r *Reconciler) reconcileEndpoints(ctx context.Context) error {
	resp, err := r.Etcd.Get(ctx, r.LeasePrefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	var ips []string
	for _, kv := range resp.Kvs {
		ips = append(ips, strings.TrimPrefix(string(kv.Key), r.LeasePrefix))
	}
	sort.Strings(ips)
	want := r.endpoints(ips)
	cur, err := r.Client.GetEndpoints(ctx, Namespace, Name)
	if apierrors.IsNotFound(err) {
		if len(want.Subsets) == 0 {
			return nil
		}
		return r.Client.CreateEndpoints(ctx, want)
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(cur.Subsets, want.Subsets) && cur.Labels[skipMirrorLabel] == "true" {
		return nil
	}
	cur = cur.DeepCopy()
	cur.Subsets = want.Subsets
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[skipMirrorLabel] = "true"
	return r.Client.UpdateEndpoints(ctx, cur)
}

// skipMirrorLabel keeps the EndpointSlice mirroring controller away: kube
// writes the apiservers' slice itself.
const skipMirrorLabel = "endpointslice.kubernetes.io/skip-mirror"

func (r *Reconciler) endpoints(ips []string) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: map[string]string{skipMirrorLabel: "true"}}}
	if len(ips) == 0 {
		return ep
	}
	ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: portName, Port: int32(r.Port), Protocol: corev1.ProtocolTCP}}}
	for _, ip := range ips {
		ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
	}
	ep.Subsets = []corev1.EndpointSubset{ss}
	return ep
}

// ensureService creates the Service, or puts back its ports and type if
// they were changed, as kube's reconciler does.
func (r *Reconciler) ensureService(ctx context.Context) error {
	ports := []corev1.ServicePort{{Name: portName, Port: port, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(r.Port))}}
	cur, err := r.Client.GetService(ctx, Namespace, Name)
	if apierrors.IsNotFound(err) {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: Namespace, Labels: map[string]string{"provider": "kubernetes", "component": "apiserver"}},
			Spec: corev1.ServiceSpec{
				Ports: ports, ClusterIP: r.ServiceIP, ClusterIPs: []string{r.ServiceIP},
				SessionAffinity: corev1.ServiceAffinityNone, Type: corev1.ServiceTypeClusterIP,
			},
		}
		err = r.Client.CreateService(ctx, svc)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err != nil {
		return err
	}
	if reflect.DeepEqual(cur.Spec.Ports, ports) && cur.Spec.Type == corev1.ServiceTypeClusterIP {
		return nil
	}
	cur = cur.DeepCopy()
	cur.Spec.Ports, cur.Spec.Type = ports, corev1.ServiceTypeClusterIP
	err = r.Client.UpdateService(ctx, cur)
	if apierrors.IsConflict(err) {
		return nil
	}
	return err
}
