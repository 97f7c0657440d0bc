package job

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// expectationsTimeout bounds how long a sync waits for the informer to
// show pods it created or deleted: an event lost for good (a watch that
// broke and relisted past it) must not stall the Job forever.
const expectationsTimeout = 5 * time.Minute

// expectations remember, per Job, the pod creations and deletions a sync
// made that the pod informer has not shown yet, and the pods whose
// tracking finalizer it removed. Until the informer catches up the Job's
// pods in the cache are stale: a sync that trusted them would create the
// same pods twice, or count a pod again after its finalizer went.
type expectations struct {
	now func() time.Time

	mu         sync.Mutex
	pods       map[string]*podExpectation
	finalizers map[string]map[types.UID]bool
}

type podExpectation struct {
	adds, dels int
	at         time.Time
}

func newExpectations(now func() time.Time) *expectations {
	return &expectations{now: now, pods: map[string]*podExpectation{}, finalizers: map[string]map[types.UID]bool{}}
}

// expectCreations replaces key's expectations with n creations.
func (e *expectations) expectCreations(key string, n int) { e.set(key, n, 0) }

// expectDeletions replaces key's expectations with n deletions.
func (e *expectations) expectDeletions(key string, n int) { e.set(key, 0, n) }

func (e *expectations) set(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.pods[key] = &podExpectation{adds: adds, dels: dels, at: e.now()}
}

func (e *expectations) creationObserved(key string) { e.lower(key, 1, 0) }

func (e *expectations) deletionObserved(key string) { e.lower(key, 0, 1) }

func (e *expectations) lower(key string, adds, dels int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x := e.pods[key]; x != nil {
		x.adds -= adds
		x.dels -= dels
	}
}

// satisfied tells whether the informer has shown every creation and
// deletion expected of key, or they have waited too long.
func (e *expectations) satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.pods[key]
	if x == nil {
		return true
	}
	if (x.adds <= 0 && x.dels <= 0) || e.now().Sub(x.at) > expectationsTimeout {
		// Later observations only lower the counts further: nothing is
		// lost by forgetting them.
		delete(e.pods, key)
		return true
	}
	return false
}

// expectFinalizersRemoved records pods whose tracking finalizer a sync is
// removing: they were counted, and must not be counted again while the
// cache still shows the finalizer.
func (e *expectations) expectFinalizersRemoved(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	set := e.finalizers[key]
	if set == nil {
		set = map[types.UID]bool{}
		e.finalizers[key] = set
	}
	for _, uid := range uids {
		set[uid] = true
	}
}

func (e *expectations) finalizerRemoved(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if set := e.finalizers[key]; set != nil {
		delete(set, uid)
		if len(set) == 0 {
			delete(e.finalizers, key)
		}
	}
}

// removingFinalizers returns a copy of the pods key expects to see
// without their tracking finalizer.
func (e *expectations) removingFinalizers(key string) map[types.UID]bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[types.UID]bool, len(e.finalizers[key]))
	for uid := range e.finalizers[key] {
		out[uid] = true
	}
	return out
}

func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pods, key)
	delete(e.finalizers, key)
}
