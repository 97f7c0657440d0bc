package flowcontrol

import (
	"math"
	"net/url"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cronplane/cronplane/pkg/endpoints/request"
)

// ObjectCounter tells how many objects of a resource are stored; false
// when it does not know.
type ObjectCounter func(schema.GroupResource) (int64, bool)

// objectsPerSeat is the objects a LIST may go through per seat it takes.
const objectsPerSeat = 100

// Width estimates the seats a request takes, as kube does: one, but for
// a LIST one per objectsPerSeat objects it is expected to go through,
// at most maxSeats. A list served from the watch cache goes through all
// the stored objects; one from etcd through twice its limit, or the
// stored objects and its limit when it filters by selector.
func Width(info *request.RequestInfo, query url.Values, count ObjectCounter, maxSeats int) int {
	if info == nil || !info.IsResourceRequest || info.Verb != "list" || count == nil {
		return 1
	}
	stored, ok := count(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource})
	if !ok {
		return 1
	}
	limit := stored
	if n, err := strconv.ParseInt(query.Get("limit"), 10, 64); err == nil && n > 0 && n < stored {
		limit = n
	}
	rv := query.Get("resourceVersion")
	hasLimit := query.Get("limit") != "" && query.Get("limit") != "0"
	fromCache := rv != "" && query.Get("continue") == "" && (!hasLimit || rv == "0")
	var objects int64
	switch {
	case fromCache:
		objects = stored
	case query.Get("labelSelector") != "" || query.Get("fieldSelector") != "":
		objects = stored + limit
	default:
		objects = 2 * limit
	}
	seats := int(math.Ceil(float64(objects) / objectsPerSeat))
	return min(max(seats, 1), maxSeats)
}
