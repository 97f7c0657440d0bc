package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"

	"github.com/gorilla/mux"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/endpoints/filters"
	"github.com/cronplane/cronplane/pkg/flowcontrol"
	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/storage"
	"github.com/cronplane/cronplane/pkg/storage/cacher"
	"github.com/cronplane/cronplane/pkg/storage/informer"
)

// newPriorityAndFairness builds the priority-and-fairness filter, with
// the server's total concurrency as kube sums it.
func (s *Server) newPriorityAndFairness(inflight *filters.MaxInFlight, terminated filters.Terminated) *filters.PriorityAndFairness {
	o := s.opts.Serving
	return &filters.PriorityAndFairness{
		Controller:  flowcontrol.New(o.MaxRequestsInFlight+o.MaxMutatingRequestsInFlight, s.Metrics, nil),
		Count:       s.countObjects,
		LongRunning: isLongRunning,
		Terminated:  terminated,
		InFlight:    inflight,
	}
}

// countObjects reads a resource's object count from its watch cache.
func (s *Server) countObjects(gr schema.GroupResource) (int64, bool) {
	if s.storage == nil {
		return 0, false
	}
	want := gr.String()
	var n int64
	found := false
	s.storage.eachCache(func(_, resource string, c *cacher.Cache) {
		if resource == want {
			n, found = int64(c.Stats().Objects), true
		}
	})
	return n, found
}

// startPriorityAndFairness feeds the dispatcher its configuration: the
// stored FlowSchemas and PriorityLevelConfigurations when the server
// serves them, kube's bootstrap objects otherwise.
func (s *Server) startPriorityAndFairness() {
	if s.life.apf == nil {
		return
	}
	var src flowcontrol.ConfigSource = bootstrapConfig{}
	fs, fsOK := s.storage.store(flowSchemasGVR)
	pl, plOK := s.storage.store(levelsGVR)
	if fsOK && plOK {
		dangling := newDanglingConditions(systemClient{s.Registry})
		go dangling.run(s.background)
		src = &storedConfig{
			run: func(ctx context.Context, prefixOf *generic.Store, h informer.Handler) {
				informer.Run(ctx, prefixOf.Storage, generic.StoragePrefix(s.opts.EtcdPrefix, prefixOf.Resource), h, nil)
			},
			flowSchemas: fs, priorityLevels: pl,
			dangling: dangling,
		}
	}
	go s.life.apf.Controller.Run(s.background, src)
}

// bootstrapConfig is kube's mandatory and suggested objects, each given a
// UID for the response headers.
type bootstrapConfig struct{}

func (bootstrapConfig) Run(ctx context.Context, set func([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration)) {
	mfs, mpl := bootstrap.Mandatory()
	sfs, spl := bootstrap.Suggested()
	fss, pls := append(mfs, sfs...), append(mpl, spl...)
	for _, fs := range fss {
		fs.UID = uuid.NewUUID()
	}
	for _, pl := range pls {
		pl.UID = uuid.NewUUID()
	}
	set(fss, pls)
	<-ctx.Done()
}

// storedConfig follows the stored objects through the watch caches.
type storedConfig struct {
	run                         func(context.Context, *generic.Store, informer.Handler)
	flowSchemas, priorityLevels *generic.Store
	dangling                    *danglingConditions

	mu  sync.Mutex
	set func([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration)
	fss map[types.UID]*flowcontrolv1.FlowSchema
	pls map[types.UID]*flowcontrolv1.PriorityLevelConfiguration
}

func (c *storedConfig) Run(ctx context.Context, set func([]*flowcontrolv1.FlowSchema, []*flowcontrolv1.PriorityLevelConfiguration)) {
	c.set = set
	c.fss, c.pls = map[types.UID]*flowcontrolv1.FlowSchema{}, map[types.UID]*flowcontrolv1.PriorityLevelConfiguration{}
	go c.run(ctx, c.priorityLevels, configHandler[flowcontrolv1.PriorityLevelConfiguration]{c, func() map[types.UID]*flowcontrolv1.PriorityLevelConfiguration { return c.pls }})
	c.run(ctx, c.flowSchemas, configHandler[flowcontrolv1.FlowSchema]{c, func() map[types.UID]*flowcontrolv1.FlowSchema { return c.fss }})
}

// publishLocked hands the whole configuration over, in name order.
func (c *storedConfig) publishLocked() {
	fss := make([]*flowcontrolv1.FlowSchema, 0, len(c.fss))
	for _, fs := range c.fss {
		fss = append(fss, fs)
	}
	sort.Slice(fss, func(i, j int) bool { return fss[i].Name < fss[j].Name })
	pls := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(c.pls))
	for _, pl := range c.pls {
		pls = append(pls, pl)
	}
	sort.Slice(pls, func(i, j int) bool { return pls[i].Name < pls[j].Name })
	c.set(fss, pls)
	c.dangling.check(fss, pls)
}

// configHandler keeps one kind of the stored configuration, as v1
// objects whatever version they are stored in.
type configHandler[T any] struct {
	c     *storedConfig
	items func() map[types.UID]*T
}

func (h configHandler[T]) Replace(objs []runtime.Object) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	items := h.items()
	clear(items)
	for _, o := range objs {
		if t, uid, ok := asV1[T](o); ok {
			items[uid] = t
		}
	}
	h.c.publishLocked()
}

func (h configHandler[T]) Set(obj runtime.Object) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if t, uid, ok := asV1[T](obj); ok {
		h.items()[uid] = t
		h.c.publishLocked()
	}
}

func (h configHandler[T]) Delete(obj runtime.Object) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if _, uid, ok := asV1[T](obj); ok {
		delete(h.items(), uid)
		h.c.publishLocked()
	}
}

// asV1 reads a stored object as its v1 form: the v1beta3 types have the
// same JSON.
func asV1[T any](obj runtime.Object) (*T, types.UID, bool) {
	obj = storage.Unwrap(obj)
	if t, ok := any(obj).(*T); ok {
		return t, uidOf(t), true
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, "", false
	}
	t := new(T)
	if json.Unmarshal(data, t) != nil {
		return nil, "", false
	}
	return t, uidOf(t), true
}

func uidOf(obj any) types.UID {
	if m, ok := obj.(interface{ GetUID() types.UID }); ok {
		return m.GetUID()
	}
	return ""
}

// installPriorityAndFairnessDebug serves kube's
// /debug/api_priority_and_fairness dumps.
func (s *Server) installPriorityAndFairnessDebug(r *mux.Router) {
	if s.life.apf == nil {
		return
	}
	c := s.life.apf.Controller
	dumps := map[string]func(http.ResponseWriter, *http.Request) error{
		"dump_priority_levels": func(w http.ResponseWriter, _ *http.Request) error { return c.DumpPriorityLevels(w) },
		"dump_queues":          func(w http.ResponseWriter, _ *http.Request) error { return c.DumpQueues(w) },
		"dump_requests": func(w http.ResponseWriter, r *http.Request) error {
			return c.DumpRequests(w, r.URL.Query().Get("includeRequestDetails") == "1")
		},
	}
	for name, dump := range dumps {
		r.HandleFunc("/debug/api_priority_and_fairness/"+name, getOnly(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_ = dump(w, r)
		}))
	}
}

// apfConsumerManager is the field manager of kube's config-consumer
// controller, which writes the Dangling conditions.
const apfConsumerManager = "api-priority-and-fairness-config-consumer-v1"

// danglingConditions keeps each FlowSchema's Dangling condition as kube's
// config-consumer controller does: False while the priority level it names
// exists, True otherwise. Writes go through a queue of names, so the watch
// handlers never wait on storage.
type danglingConditions struct {
	client systemClient
	wake   chan struct{}

	mu      sync.Mutex
	pending map[string]bool
	levels  map[string]bool
}

func newDanglingConditions(c systemClient) *danglingConditions {
	return &danglingConditions{client: c, wake: make(chan struct{}, 1), pending: map[string]bool{}, levels: map[string]bool{}}
}

// check queues the FlowSchemas whose condition is not what the levels
// make it.
func (d *danglingConditions) check(fss []*flowcontrolv1.FlowSchema, pls []*flowcontrolv1.PriorityLevelConfiguration) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	clear(d.levels)
	for _, pl := range pls {
		d.levels[pl.Name] = true
	}
	queued := false
	for _, fs := range fss {
		if want := d.conditionLocked(fs); !hasCondition(fs, want) {
			d.pending[fs.Name] = true
			queued = true
		}
	}
	if queued {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// conditionLocked is the Dangling condition fs should carry, in kube's
// words.
func (d *danglingConditions) conditionLocked(fs *flowcontrolv1.FlowSchema) flowcontrolv1.FlowSchemaCondition {
	name := fs.Spec.PriorityLevelConfiguration.Name
	if d.levels[name] {
		return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionFalse, Reason: "Found",
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", name)}
	}
	return flowcontrolv1.FlowSchemaCondition{Type: flowcontrolv1.FlowSchemaConditionDangling, Status: flowcontrolv1.ConditionTrue, Reason: "NotFound",
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", name)}
}

func hasCondition(fs *flowcontrolv1.FlowSchema, want flowcontrolv1.FlowSchemaCondition) bool {
	for _, c := range fs.Status.Conditions {
		if c.Type == want.Type {
			return c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
		}
	}
	return false
}

// run writes the queued conditions until ctx ends. A write that loses to
// another writer is dropped: the watch brings the object back to check.
func (d *danglingConditions) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		}
		d.mu.Lock()
		names := make([]string, 0, len(d.pending))
		for n := range d.pending {
			names = append(names, n)
		}
		clear(d.pending)
		d.mu.Unlock()
		for _, n := range names {
			if err := d.write(ctx, n); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
				klog.FromContext(ctx).Error(err, "Writing the Dangling condition", "flowSchema", n)
			}
		}
	}
}

func (d *danglingConditions) write(ctx context.Context, name string) error {
	obj, err := d.client.get(ctx, flowSchemasGVR, "", name)
	if err != nil {
		return err
	}
	fs, ok := obj.(*flowcontrolv1.FlowSchema)
	if !ok {
		return fmt.Errorf("flowschema %s read as %T", name, obj)
	}
	d.mu.Lock()
	want := d.conditionLocked(fs)
	d.mu.Unlock()
	if hasCondition(fs, want) {
		return nil
	}
	want.LastTransitionTime = metav1.Now()
	conds := fs.Status.Conditions[:0]
	for _, c := range fs.Status.Conditions {
		if c.Type != want.Type {
			conds = append(conds, c)
		}
	}
	fs.Status.Conditions = append(conds, want)
	return d.client.updateSubresourceAs(ctx, flowSchemasGVR, "status", "", fs, apfConsumerManager)
}
