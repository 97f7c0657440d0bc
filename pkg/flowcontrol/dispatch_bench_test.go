package flowcontrol

import (
	"context"
	"net/url"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// BenchmarkController_GetOfALimitedLevel is what a GET of a user in
// global-default costs the dispatcher: classification, width, admission
// through the level's queues and the end of the request.
func BenchmarkController_GetOfALimitedLevel(b *testing.B) {
	mfs, mpl := bootstrap.Mandatory()
	sfs, spl := bootstrap.Suggested()
	c := New(600, metrics.NewRegistry(), nil)
	c.SetConfig(append(mfs, sfs...), append(mpl, spl...))
	d := Digest{
		User: &user.Info{Name: "bench-reader", Groups: []string{"system:authenticated"}},
		Info: &request.RequestInfo{IsResourceRequest: true, Verb: "get", APIGroup: "batch", APIVersion: "v1", Namespace: "bench", Resource: "cronjobs", Name: "cj-00000"},
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cl, ok := c.Classify(d)
			if !ok {
				b.Fatal("not classified")
			}
			w := Width(d.Info, url.Values{}, nil, cl.MaxSeats)
			t, reason := c.Admit(ctx, nil, cl, d, w, false)
			if t == nil {
				b.Fatal(reason)
			}
			t.Finish()
		}
	})
}
