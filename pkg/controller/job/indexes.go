package job

import (
	"math"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// noIndex is the completion index of a pod that has none, or a bad one.
const noIndex = -1

// interval is a run of completion indexes, first to last inclusive.
type interval struct{ first, last int }

// indexSet is a set of completion indexes as sorted, disjoint and
// non-adjacent intervals: the shape of status.completedIndexes and
// status.failedIndexes.
type indexSet []interval

// parseIndexSet reads kube's compressed form ("1,3-5,7") of a Job with
// completions indexes. Malformed entries are skipped and indexes past
// the last are dropped, as kube does, so that a corrupted or shrunk list
// heals on the next write.
func parseIndexSet(s string, completions int) indexSet {
	if s == "" {
		return nil
	}
	var parts indexSet
	for _, part := range strings.Split(s, ",") {
		bounds := strings.SplitN(part, "-", 2)
		first, err := strconv.Atoi(bounds[0])
		if err != nil || first < 0 || first >= completions {
			continue
		}
		last := first
		if len(bounds) == 2 {
			if last, err = strconv.Atoi(bounds[1]); err != nil || last < first {
				continue
			}
			last = min(last, completions-1)
		}
		parts = append(parts, interval{first, last})
	}
	return indexSet(nil).union(parts)
}

// String writes the set in kube's compressed form: a run of two is
// written as two indexes, a longer run as first-last.
func (s indexSet) String() string {
	var b strings.Builder
	for i, iv := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.first))
		switch {
		case iv.last == iv.first+1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(iv.last))
		case iv.last > iv.first:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(iv.last))
		}
	}
	return b.String()
}

func (s indexSet) has(ix int) bool {
	i := sort.Search(len(s), func(i int) bool { return s[i].last >= ix })
	return i < len(s) && s[i].first <= ix
}

func (s indexSet) total() int {
	n := 0
	for _, iv := range s {
		n += iv.last - iv.first + 1
	}
	return n
}

// union returns the set of the indexes in s or in the intervals of o,
// which need not be sorted nor disjoint.
func (s indexSet) union(o []interval) indexSet {
	all := make([]interval, 0, len(s)+len(o))
	all = append(append(all, s...), o...)
	sort.Slice(all, func(i, k int) bool { return all[i].first < all[k].first })
	var out indexSet
	for _, iv := range all {
		if n := len(out); n > 0 && iv.first <= out[n-1].last+1 {
			out[n-1].last = max(out[n-1].last, iv.last)
			continue
		}
		out = append(out, iv)
	}
	return out
}

// with returns the set with the given indexes added.
func (s indexSet) with(ixs ...int) indexSet {
	if len(ixs) == 0 {
		return s
	}
	ivs := make([]interval, len(ixs))
	for i, ix := range ixs {
		ivs[i] = interval{ix, ix}
	}
	return s.union(ivs)
}

// firstMissing returns up to count of the lowest indexes below
// completions that s lacks.
func (s indexSet) firstMissing(count, completions int) []int {
	var out []int
	next := 0
	take := func(upTo int) {
		for ; next < min(upTo, completions) && len(out) < count; next++ {
			out = append(out, next)
		}
	}
	for _, iv := range s {
		take(iv.first)
		next = max(next, iv.last+1)
	}
	take(completions)
	return out
}

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func completions(job *batchv1.Job) int {
	if job.Spec.Completions == nil {
		return 0
	}
	return int(*job.Spec.Completions)
}

// completionIndex reads a pod's batch.kubernetes.io/job-completion-index
// annotation: noIndex when missing or not a non-negative number.
func completionIndex(pod *corev1.Pod) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// validIndex returns a pod's completion index when it is one of job's,
// else noIndex.
func validIndex(job *batchv1.Job, pod *corev1.Pod) int {
	if ix := completionIndex(pod); ix != noIndex && ix < completions(job) {
		return ix
	}
	return noIndex
}

func indexesOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := completionIndex(p); ix != noIndex {
			out = append(out, ix)
		}
	}
	return out
}

// annotationCount reads a failure-count annotation; a missing, malformed
// or out-of-range value counts as zero, so that a user cannot make an
// index fail, nor live forever, by writing a bad one.
func annotationCount(pod *corev1.Pod, key string) int32 {
	v, ok := pod.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// indexFailures is how many earlier pods of this pod's index failed and
// counted against backoffLimitPerIndex.
func indexFailures(pod *corev1.Pod) int32 {
	return annotationCount(pod, batchv1.JobIndexFailureCountAnnotation)
}

// indexAllFailures adds the failures the pod failure policy ignored.
func indexAllFailures(pod *corev1.Pod) int32 {
	return indexFailures(pod) + annotationCount(pod, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return isIndexed(job) && job.Spec.BackoffLimitPerIndex != nil
}

// indexFailed tells whether a pod's failure fails its index: the pod
// failure policy says FailIndex, or the failure counts and the index has
// used up its backoffLimitPerIndex.
func indexFailed(job *batchv1.Job, pod *corev1.Pod) bool {
	if !podFailed(job, pod) {
		return false
	}
	rule, matched := matchFailurePolicy(job.Spec.PodFailurePolicy, pod)
	if matched && rule.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	if matched && rule.action == batchv1.PodFailurePolicyActionIgnore {
		return false
	}
	return indexFailures(pod) >= *job.Spec.BackoffLimitPerIndex
}

// nextIndexFailureCounts returns the failure-count annotations of the pod
// that replaces failed in its index: failed's counts plus its own failure,
// in the ignored count when the pod failure policy ignores it.
func nextIndexFailureCounts(job *batchv1.Job, failed *corev1.Pod) (counted, ignored int32) {
	if failed == nil {
		return 0, 0
	}
	counted = indexFailures(failed)
	ignored = annotationCount(failed, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if rule, matched := matchFailurePolicy(job.Spec.PodFailurePolicy, failed); matched && rule.action == batchv1.PodFailurePolicyActionIgnore {
		ignored++
	} else {
		counted++
	}
	return counted, ignored
}
