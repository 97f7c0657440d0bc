package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failureRule is the rule of a pod failure policy a failed pod matched.
type failureRule struct {
	action batchv1.PodFailurePolicyAction
	// message is the Job's failure message, for FailJob.
	message string
}

// matchFailurePolicy returns the first rule of policy that a failed pod
// matches: a terminated container (regular containers first, then init
// containers) with a non-zero exit code the rule's onExitCodes select, or
// a pod condition with the type and status onPodConditions name. A rule
// with an action this controller does not know is passed over.
func matchFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) (failureRule, bool) {
	if policy == nil {
		return failureRule{}, false
	}
	for i, rule := range policy.Rules {
		var message string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchExitCodes(pod.Status.ContainerStatuses, rule.OnExitCodes)
			if cs == nil {
				cs = matchExitCodes(pod.Status.InitContainerStatuses, rule.OnExitCodes)
			}
			if cs == nil {
				continue
			}
			message = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			cond := matchPodConditions(pod.Status.Conditions, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			message = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, cond.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionFailJob:
			return failureRule{action: rule.Action, message: message}, true
		case batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return failureRule{action: rule.Action}, true
		}
	}
	return failureRule{}, false
}

// failureCounts tells whether a failed pod counts against the backoff
// limits: it does unless the pod failure policy ignores it.
func failureCounts(job *batchv1.Job, pod *corev1.Pod) bool {
	rule, matched := matchFailurePolicy(job.Spec.PodFailurePolicy, pod)
	return !matched || rule.action != batchv1.PodFailurePolicyActionIgnore
}

func matchExitCodes(statuses []corev1.ContainerStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for i := range statuses {
		cs := &statuses[i]
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		if req.ContainerName != nil && *req.ContainerName != cs.Name {
			continue
		}
		listed := false
		for _, v := range req.Values {
			if v == t.ExitCode {
				listed = true
				break
			}
		}
		switch req.Operator {
		case batchv1.PodFailurePolicyOnExitCodesOpIn:
			if listed {
				return cs
			}
		case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
			if !listed {
				return cs
			}
		}
	}
	return nil
}

func matchPodConditions(conds []corev1.PodCondition, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range conds {
		for _, p := range patterns {
			if conds[i].Type == p.Type && conds[i].Status == p.Status {
				return &conds[i]
			}
		}
	}
	return nil
}

// failJobMessage returns the failure message of the first failed pod a
// FailJob rule matches.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !podFailed(job, p) {
			continue
		}
		if rule, matched := matchFailurePolicy(job.Spec.PodFailurePolicy, p); matched && rule.action == batchv1.PodFailurePolicyActionFailJob {
			return rule.message, true
		}
	}
	return "", false
}
