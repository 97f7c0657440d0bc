package flowcontrol

import (
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/runtime"
)

// kube's defaults, the same in v1 and v1beta3 but for
// nominalConcurrencyShares, which v1 defaults only when unset and v1beta3
// (where it cannot be unset) whenever it is 0 and not marked as meant.
const (
	defaultMatchingPrecedence = 1000
	defaultShares             = 30
	defaultQueues             = 64
	defaultHandSize           = 8
	defaultQueueLengthLimit   = 50
)

func int32Ptr(v int32) *int32 { return &v }

func defaultFlowSchemaV1(obj runtime.Object) {
	fs := obj.(*flowcontrolv1.FlowSchema)
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

func defaultFlowSchemaBeta3(obj runtime.Object) {
	fs := obj.(*flowcontrolv1beta3.FlowSchema)
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = defaultMatchingPrecedence
	}
}

func defaultLevelV1(obj runtime.Object) {
	spec := &obj.(*flowcontrolv1.PriorityLevelConfiguration).Spec
	if l := spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = int32Ptr(defaultShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = int32Ptr(0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := spec.Exempt; e != nil {
		defaultExempt(&e.NominalConcurrencyShares, &e.LendablePercent)
	}
}

func defaultLevelBeta3(obj runtime.Object) {
	pl := obj.(*flowcontrolv1beta3.PriorityLevelConfiguration)
	if l := pl.Spec.Limited; l != nil {
		if _, meant := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; l.NominalConcurrencyShares == 0 && !meant {
			l.NominalConcurrencyShares = defaultShares
		}
		if l.LendablePercent == nil {
			l.LendablePercent = int32Ptr(0)
		}
		if q := l.LimitResponse.Queuing; q != nil {
			defaultQueuing(&q.Queues, &q.HandSize, &q.QueueLengthLimit)
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		defaultExempt(&e.NominalConcurrencyShares, &e.LendablePercent)
	}
}

func defaultQueuing(queues, handSize, queueLengthLimit *int32) {
	if *queues == 0 {
		*queues = defaultQueues
	}
	if *handSize == 0 {
		*handSize = defaultHandSize
	}
	if *queueLengthLimit == 0 {
		*queueLengthLimit = defaultQueueLengthLimit
	}
}

func defaultExempt(shares, lendable **int32) {
	if *shares == nil {
		*shares = int32Ptr(0)
	}
	if *lendable == nil {
		*lendable = int32Ptr(0)
	}
}
