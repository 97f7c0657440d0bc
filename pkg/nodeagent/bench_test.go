package nodeagent

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/cronplane/cronplane/pkg/nodeagent/engine"
)

// BenchmarkSyncPod_StartsAPodOnTheEngine measures the agent's share of a
// pod's start with the machine's Docker engine: from the sync of a new
// pod to its container started in its sandbox and the status written
// (to a fake apiserver), image present. It needs a busybox image, as
// make images or the node agent's integration tests build it.
func BenchmarkSyncPod_StartsAPodOnTheEngine(b *testing.B) {
	ctx := context.Background()
	eng, err := engine.NewDocker("")
	if err != nil {
		b.Fatal(err)
	}
	if _, err := eng.Info(ctx); err != nil {
		b.Skipf("no Docker engine answers: %v", err)
	}
	image := ""
	for _, ref := range []string{"busybox", "cronplane-test/busybox:nodeagent"} {
		if _, err := eng.Image(ctx, ref); err == nil {
			image = ref
			break
		}
	}
	if image == "" {
		b.Skip("no busybox image (make images, or the node agent's integration tests, build one)")
	}
	a, client := testAgent(b, eng)
	// A node of its own: the cleanup removes its containers only.
	a.opts.NodeName, a.opts.SandboxImage = "bench-"+rand.String(5), image
	b.Cleanup(func() {
		list, _ := eng.List(ctx, a.ownLabels())
		for _, c := range list {
			_ = eng.Remove(ctx, c.ID)
		}
	})
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := jobPod(corev1.RestartPolicyNever, corev1.PullIfNotPresent)
		pod.Name, pod.UID, pod.Spec.NodeName = fmt.Sprintf("p%d", i), types.UID(rand.String(10)), a.opts.NodeName
		c := &pod.Spec.Containers[0]
		c.Image, c.Command, c.Env, c.Resources = image, []string{"sleep", "60"}, nil, corev1.ResourceRequirements{}
		b.StopTimer()
		a.setPod(b, client, pod)
		b.StartTimer()
		begin := time.Now()
		if err := a.syncPod(ctx, "ns/"+pod.Name); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(begin))
		b.StopTimer()
		list, err := eng.List(ctx, map[string]string{labelPodUID: string(pod.UID)})
		if err != nil || len(list) != 2 {
			b.Fatalf("containers of the pod: %+v %v", list, err)
		}
		for _, c := range list {
			if c.State != engine.Running {
				b.Fatalf("container %s %s", c.Name, c.State)
			}
			_ = eng.Remove(ctx, c.ID)
		}
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
