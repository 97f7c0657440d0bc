//go:build e2e

package e2e

import (
	"sync"
	"testing"
	"time"
)

// TestOverlapped runs the cases that leave the cluster serving through
// apiserver-lb, overlapped, after the cases that do not (the sequential
// tests, which t.Parallel puts before it). The twenty CronJobs' three
// minutes would otherwise add to the faults' time:
//
//	CronJobs_Twenty... ──────────────────────────────────────────────┐
//	Cluster_READMECronJob... ──┐                                      │
//	ControllerManager_... ─────┴─ LoadBalancer_... ─ the whole-cluster cases ┘
//
// The CronJob cases go on through the faults they survive, which makes
// them stronger: across a controller-manager leader change and
// apiserver-0 stopped behind the balancer, each CronJob still has exactly
// one Job per scheduled time, every Job Complete with one pod, its log
// readable. The cases that need every component whole (both apiservers
// answering directly, both endpoints listed, the job controller's
// in-memory backoff kept) run together once those faults are over.
//
// The sequential cases break what the CronJob cases cannot survive:
//   - etcd quorum lost: no write commits for as long as the outage lasts,
//     so a minute may go by without its Job, and /readyz fails on both
//     apiservers, which takes both out of the balancer;
//   - the runtime-config rollout turns batch/v1 off: the CronJobs are not
//     served and the cronjob controller stops;
//   - etcd-events stopped: /readyz fails on both apiservers again;
//   - node-0 stopped: its pods are evicted and count as failed;
//   - kill -9 of apiserver-0, its network cut from etcd, kill -9 of a node
//     agent: they would survive if timed as the two faults above are
//     (inQuietPartOfMinute), but those already fill the CronJobs' three
//     minutes; the agent kill would also risk the node going Unknown,
//     and its pods evicted, should its restart take the grace period on
//     a loaded machine;
//   - the CRD case measures a 2 s target, not to be taken amid twenty
//     pods starting.
func TestOverlapped(t *testing.T) {
	t.Parallel()
	var running sync.WaitGroup
	start := func(name string, f func(*testing.T)) *sync.WaitGroup {
		var done sync.WaitGroup
		running.Add(1)
		done.Add(1)
		go func() {
			defer running.Done()
			defer done.Done()
			t.Run(name, f)
		}()
		return &done
	}
	start("CronJobs_TwentyEveryMinuteForThreeMinutesEachRunOnceAndLogged", cronJobsTwentyEveryMinuteForThreeMinutesEachRunOnceAndLogged)
	// The README's CronJob reads through apiserver-0: it goes on through
	// the leader change only.
	readme := start("Cluster_READMECronJobRunsAndItsLogPrintsHi", clusterREADMECronJobRunsAndItsLogPrintsHi)
	t.Run("ControllerManager_LeaderStopsTheOtherTakesOverAndCronJobsGoOn", controllerManagerLeaderStopsTheOtherTakesOverAndCronJobsGoOn)
	readme.Wait()
	t.Run("LoadBalancer_ApiserverStoppedFor60sWritesFailOverAndNoJobIsMissed", loadBalancerApiserverStoppedFor60sWritesFailOverAndNoJobIsMissed)
	start("Cluster_WritesThroughOneApiserverAreReadAndWatchedThroughTheOther", clusterWritesThroughOneApiserverAreReadAndWatchedThroughTheOther)
	start("Cluster_JobRunsOnANodeAgentAndItsLogIsServed", clusterJobRunsOnANodeAgentAndItsLogIsServed)
	start("KubernetesService_EndpointsListBothApiservers", kubernetesServiceEndpointsListBothApiservers)
	start("Job_ContainerOverItsMemoryLimitIsOOMKilledAndTheBackoffApplies", jobContainerOverItsMemoryLimitIsOOMKilledAndTheBackoffApplies)
	running.Wait()
}

// The part of a minute in which the faults overlapped with the CronJob
// cases begin. The suite's CronJobs all run every minute: their Jobs are
// created within a second of the minute's turn and their pods right
// after (on the loaded machine, every pod of the twenty CronJobs was
// Complete within 29 s of its time, most within 16 s). A fault that cuts
// connections then (the balancer closes those through an apiserver it
// takes out; a killed leader's requests in flight) may lose the answer to
// a pod create that was stored, and the job controller, as kube's, would
// create a second pod for that Job: one pod per Job could not be asserted.
const (
	quietFrom  = 20 * time.Second
	quietUntil = 45 * time.Second
)

// inQuietPartOfMinute returns at once within [quietFrom, quietUntil) of a
// minute, and else waits until quietFrom.
func inQuietPartOfMinute(t *testing.T) {
	t.Helper()
	now := time.Now()
	into := now.Sub(now.Truncate(time.Minute))
	if into >= quietFrom && into < quietUntil {
		return
	}
	wait := quietFrom - into
	if wait < 0 {
		wait += time.Minute
	}
	t.Logf("the fault waits %v, for second %d of the minute, clear of the CronJobs' turn", wait.Round(time.Millisecond), quietFrom/time.Second)
	time.Sleep(wait)
}
