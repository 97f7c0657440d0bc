package apiserver_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/apiserver"
	"github.com/cronplane/cronplane/pkg/apiserver/apiservertest"
	"github.com/cronplane/cronplane/pkg/codec"
	"github.com/cronplane/cronplane/pkg/flowcontrol/bootstrap"
)

const (
	apfProducer = "api-priority-and-fairness-config-producer-v1"
	apfConsumer = "api-priority-and-fairness-config-consumer-v1"
)

// A server that has just become ready holds kube's bootstrap FlowSchemas
// and priority levels, written by kube's field manager.
func TestFlowControlBootstrap_FreshServerHasKubeConfiguration(t *testing.T) {
	c := srv.Client.FlowcontrolV1()
	mfs, mpl := bootstrap.Mandatory()
	sfs, spl := bootstrap.Suggested()
	for _, want := range append(mfs, sfs...) {
		got, err := c.FlowSchemas().Get(ctx(t), want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("FlowSchema %s: %v", want.Name, err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || got.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("FlowSchema %s: %+v %v", want.Name, got.Spec, got.Annotations)
		}
		// The producer writes the spec; the consumer may have written the
		// Dangling condition already.
		producer := false
		for _, m := range got.ManagedFields {
			producer = producer || m.Manager == apfProducer
			if m.Manager != apfProducer && (m.Manager != apfConsumer || m.Subresource != "status") {
				producer = false
				break
			}
		}
		if !producer {
			t.Errorf("FlowSchema %s managed by %+v", want.Name, got.ManagedFields)
		}
	}
	for _, want := range append(mpl, spl...) {
		got, err := c.PriorityLevelConfigurations().Get(ctx(t), want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("level %s: %v", want.Name, err)
		}
		if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || got.Generation != 1 {
			t.Errorf("level %s: generation %d %+v", want.Name, got.Generation, got.Spec)
		}
	}
}

// The objects are stored as kube v1.29 stores them: v1beta3 protobuf.
func TestFlowControl_StoredAsV1beta3Protobuf(t *testing.T) {
	for _, tc := range []struct{ key, kind string }{
		{"/registry/prioritylevelconfigurations/workload-high", "PriorityLevelConfiguration"},
		{"/registry/flowschemas/probes", "FlowSchema"},
	} {
		resp, err := srv.EtcdClient().Get(ctx(t), tc.key)
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("%s: %v %v", tc.key, resp, err)
		}
		data := resp.Kvs[0].Value
		if !bytes.HasPrefix(data, codec.ProtobufMagic) {
			t.Fatalf("%s is not protobuf: %q", tc.key, data)
		}
		u, err := codec.OpenEnvelope(data)
		if err != nil {
			t.Fatal(err)
		}
		if u.APIVersion != "flowcontrol.apiserver.k8s.io/v1beta3" || u.Kind != tc.kind {
			t.Errorf("%s stored as %s %s", tc.key, u.APIVersion, u.Kind)
		}
	}
}

// Writes through v1beta3 read back through v1 with v1's view of the same
// stored object, and v1beta3 defaults nominalConcurrencyShares to 30.
func TestFlowControl_V1beta3AndV1ShareStorage(t *testing.T) {
	beta := srv.Client.FlowcontrolV1beta3().PriorityLevelConfigurations()
	pl := &flowcontrolv1beta3.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "shared-storage"},
		Spec: flowcontrolv1beta3.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1beta3.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1beta3.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1beta3.LimitResponse{Type: flowcontrolv1beta3.LimitResponseTypeQueue, Queuing: &flowcontrolv1beta3.QueuingConfiguration{}},
			},
		},
	}
	if _, err := beta.Create(ctx(t), pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = beta.Delete(context.Background(), pl.Name, metav1.DeleteOptions{}) })
	got, err := srv.Client.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx(t), pl.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := got.Spec.Limited
	if *l.NominalConcurrencyShares != 30 || *l.LendablePercent != 0 || l.LimitResponse.Queuing.Queues != 64 ||
		l.LimitResponse.Queuing.HandSize != 8 || l.LimitResponse.Queuing.QueueLengthLimit != 50 {
		t.Fatalf("defaults: %+v %+v", l, l.LimitResponse.Queuing)
	}
}

// Mandatory objects' specs are fixed, but for the exempt level's own
// tuning.
func TestFlowControl_MandatorySpecsAreFixed(t *testing.T) {
	c := srv.Client.FlowcontrolV1()
	fs, err := c.FlowSchemas().Get(ctx(t), "catch-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Spec.MatchingPrecedence = 9999
	if _, err := c.FlowSchemas().Update(ctx(t), fs, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing catch-all's precedence: %v", err)
	}
	pl, err := c.PriorityLevelConfigurations().Get(ctx(t), "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shares := int32(4)
	pl.Spec.Exempt.NominalConcurrencyShares = &shares
	if _, err := c.PriorityLevelConfigurations().Update(ctx(t), pl, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("tuning the exempt level: %v", err)
	}
	t.Cleanup(func() {
		pl, err := c.PriorityLevelConfigurations().Get(context.Background(), "exempt", metav1.GetOptions{})
		if err == nil {
			pl.Spec.Exempt.NominalConcurrencyShares = new(int32)
			_, _ = c.PriorityLevelConfigurations().Update(context.Background(), pl, metav1.UpdateOptions{})
		}
	})
}

// startIn starts a server keeping its data in dir, which outlives it.
func startIn(t *testing.T, dir string) *apiservertest.Server {
	t.Helper()
	s, err := apiservertest.New(func(o *apiserver.Options) { o.DataDir = dir })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// On restart the server puts back what was removed or changed of the
// bootstrap configuration, as kube's hook does, but leaves alone the
// suggested objects an operator took over with autoupdate-spec=false, and
// deletes auto-updated objects that are no longer part of it.
func TestFlowControlBootstrap_RestartRestoresConfiguration(t *testing.T) {
	dir, err := os.MkdirTemp("", "cronplane-apf-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	first := startIn(t, dir)
	c := first.Client.FlowcontrolV1()
	rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			first.Stop()
			t.Fatal(err)
		}
	}
	must(c.PriorityLevelConfigurations().Delete(rctx, "catch-all", metav1.DeleteOptions{}))
	must(c.FlowSchemas().Delete(rctx, "exempt", metav1.DeleteOptions{}))
	must(c.FlowSchemas().Delete(rctx, "probes", metav1.DeleteOptions{}))
	setShares := func(name, autoUpdate string) {
		pl, err := c.PriorityLevelConfigurations().Get(rctx, name, metav1.GetOptions{})
		must(err)
		pl.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] = autoUpdate
		*pl.Spec.Limited.NominalConcurrencyShares = 7
		_, err = c.PriorityLevelConfigurations().Update(rctx, pl, metav1.UpdateOptions{})
		must(err)
	}
	setShares("workload-low", "false")
	setShares("global-default", "true")
	_, err = c.PriorityLevelConfigurations().Create(rctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "retired", Annotations: map[string]string{flowcontrolv1.AutoUpdateAnnotationKey: "true"}},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type:    flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}},
		},
	}, metav1.CreateOptions{})
	must(err)
	first.Stop()

	second := startIn(t, dir)
	defer second.Stop()
	c = second.Client.FlowcontrolV1()
	for _, name := range []string{"exempt", "probes"} {
		if _, err := c.FlowSchemas().Get(rctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("FlowSchema %s: %v", name, err)
		}
	}
	if _, err := c.PriorityLevelConfigurations().Get(rctx, "catch-all", metav1.GetOptions{}); err != nil {
		t.Errorf("catch-all: %v", err)
	}
	for name, want := range map[string]int32{"workload-low": 7, "global-default": 20} {
		pl, err := c.PriorityLevelConfigurations().Get(rctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *pl.Spec.Limited.NominalConcurrencyShares; got != want {
			t.Errorf("%s has %d shares, want %d", name, got, want)
		}
	}
	if _, err := c.PriorityLevelConfigurations().Get(rctx, "retired", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("retired level: %v, want it deleted", err)
	}
}

// A FlowSchema's Dangling condition says, in kube's words, whether the
// priority level it names exists, and follows the level's creation.
func TestFlowControl_DanglingConditionFollowsTheLevel(t *testing.T) {
	c := srv.Client.FlowcontrolV1()
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "dangling-test"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "dangling-level"},
			MatchingPrecedence:         5000,
		},
	}
	if _, err := c.FlowSchemas().Create(ctx(t), fs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.FlowSchemas().Delete(context.Background(), fs.Name, metav1.DeleteOptions{}) })
	waitDangling(t, fs.Name, flowcontrolv1.ConditionTrue, "NotFound",
		`This FlowSchema references the PriorityLevelConfiguration object named "dangling-level" but there is no such object`)

	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "dangling-level"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
			},
		},
	}
	if _, err := c.PriorityLevelConfigurations().Create(ctx(t), pl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.PriorityLevelConfigurations().Delete(context.Background(), pl.Name, metav1.DeleteOptions{})
	})
	got := waitDangling(t, fs.Name, flowcontrolv1.ConditionFalse, "Found",
		`This FlowSchema references the PriorityLevelConfiguration object named "dangling-level" and it exists`)
	consumer := 0
	for _, m := range got.ManagedFields {
		if m.Manager == apfConsumer && m.Subresource == "status" {
			consumer++
		}
	}
	if len(got.ManagedFields) != 2 || consumer != 1 {
		t.Errorf("managedFields: %+v", got.ManagedFields)
	}
}

func waitDangling(t *testing.T, name string, status flowcontrolv1.ConditionStatus, reason, message string) *flowcontrolv1.FlowSchema {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := srv.Client.FlowcontrolV1().FlowSchemas().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling && c.Status == status && c.Reason == reason && c.Message == message {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("FlowSchema %s conditions: %+v", name, got.Status.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
