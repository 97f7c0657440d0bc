package webhook

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/admission"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// BenchmarkValidating_OneWebhook is creates through one validating
// webhook on loopback, 16 at a time (8 per core): the apiserver's side
// of the call, and a webhook that decodes the review and allows it.
func BenchmarkValidating_OneWebhook(b *testing.B) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(admissionv1.AdmissionReview{TypeMeta: review.TypeMeta,
			Response: &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}})
	}))
	// The transport may dial a connection it then has no use for: the
	// server, closed, logs its handshake cut short.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	defer srv.Close()
	url, none := srv.URL+"/hook", admissionregistrationv1.SideEffectClassNone
	w := admissionregistrationv1.ValidatingWebhook{Name: "hook.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
		Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}
	src := fakeSource{validating: []*admissionregistrationv1.ValidatingWebhookConfiguration{{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}}}
	_, v := New(Config{Source: src, Namespaces: fakeNamespaces{"plain": nil}, Resources: fakeResources{}, Metrics: metrics.NewRegistry()})
	data := map[string]string{"pad": strings.Repeat("x", 740)}
	b.SetParallelism(8)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			a := &admission.Attributes{
				Operation: admission.Create, Resource: configMaps, Kind: corev1.SchemeGroupVersion.WithKind("ConfigMap"),
				Namespace: "plain", Name: "cm", Options: &metav1.CreateOptions{},
				Object: &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
					ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "plain", Labels: map[string]string{"app": "bench"}}, Data: data},
			}
			if err := v.Validate(context.Background(), a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
