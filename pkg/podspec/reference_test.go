package podspec

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// reference is a kube-apiserver v1.29 to check the tables against, when
// one runs (see ../shared/reference from the repository root):
// CRONPLANE_REFERENCE_KUBECONFIG names its kubeconfig. Without one the
// tables check only cronplane.
type reference struct {
	client   kubernetes.Interface
	warnings *warningCollector
}

type warningCollector struct{ texts []string }

func (w *warningCollector) HandleWarningHeader(_ int, _ string, text string) {
	w.texts = append(w.texts, text)
}

func referenceServer(t *testing.T) *reference {
	t.Helper()
	path := os.Getenv("CRONPLANE_REFERENCE_KUBECONFIG")
	if path == "" {
		path = "/tmp/cronplane-reference/admin.kubeconfig"
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil
	}
	w := &warningCollector{}
	cfg.WarningHandler = w
	cfg.Timeout = 10 * time.Second
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		return nil
	}
	return &reference{client: client, warnings: w}
}

// podTemplate sends t to the reference as a PodTemplate, dry run, and
// returns its field errors ("field: body") and warnings.
func (r *reference) podTemplate(t *testing.T, tmpl *corev1.PodTemplateSpec) (errs, warnings []string) {
	t.Helper()
	r.warnings.texts = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	obj := &corev1.PodTemplate{ObjectMeta: metav1.ObjectMeta{Name: "podspec-table"}, Template: *tmpl}
	_, err := r.client.CoreV1().PodTemplates("default").Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var se *apierrors.StatusError
	switch {
	case err == nil:
	case errors.As(err, &se) && se.ErrStatus.Code == http.StatusUnprocessableEntity && se.ErrStatus.Details != nil:
		for _, c := range se.ErrStatus.Details.Causes {
			errs = append(errs, c.Field+": "+c.Message)
		}
	default:
		t.Fatalf("reference: %v", err)
	}
	return errs, r.warnings.texts
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
