package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/controller/rootcacertpublisher"
)

func getRootCA(ns string) (*corev1.ConfigMap, error) {
	return srv.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), rootcacertpublisher.ConfigMapName, metav1.GetOptions{})
}

// As the upstream spec "ServiceAccounts should guarantee kube-root-ca.crt
// exist in any namespace": the ConfigMap appears in a new namespace (and
// the built-in ones), with the apiserver's CA, and comes back when it is
// deleted or changed.
func TestRootCACertPublisher_KeepsKubeRootCAInEveryNamespace(t *testing.T) {
	runManager(t, true, "root-ca-cert-publisher")
	ctx := context.Background()
	ns := newNamespace(t, "root-ca")
	published := func(ns string) func() (bool, error) {
		return func() (bool, error) {
			cm, err := getRootCA(ns)
			return err == nil && cm.Data["ca.crt"] == string(srv.CAData) && cm.Annotations["kubernetes.io/description"] == rootcacertpublisher.Description, nil
		}
	}
	for _, name := range []string{ns, "default", "kube-system"} {
		waitFor(t, "kube-root-ca.crt in "+name, published(name))
	}
	first, err := getRootCA(ns)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.CoreV1().ConfigMaps(ns).Delete(ctx, first.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-root-ca.crt to come back", func() (bool, error) {
		cm, err := getRootCA(ns)
		return err == nil && cm.UID != first.UID && cm.Data["ca.crt"] == string(srv.CAData), nil
	})
	changed, err := getRootCA(ns)
	if err != nil {
		t.Fatal(err)
	}
	changed.Data = map[string]string{"ca.crt": "not a CA"}
	if _, err := srv.Client.CoreV1().ConfigMaps(ns).Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "kube-root-ca.crt to be put back", published(ns))
}
