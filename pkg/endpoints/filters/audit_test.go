package filters

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/cronplane/cronplane/pkg/audit"
	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/authorizer"
	"github.com/cronplane/cronplane/pkg/auth/user"
	"github.com/cronplane/cronplane/pkg/endpoints/request"
	"github.com/cronplane/cronplane/pkg/metrics"
)

// newAuditor logs to a temporary file with the policy given; events
// reads the file once the auditor is closed.
func newAuditor(t testing.TB, policy string) (a *audit.Auditor, events func() []audit.Event) {
	t.Helper()
	dir := t.TempDir()
	o := audit.Options{PolicyFile: filepath.Join(dir, "policy.yaml"), LogPath: filepath.Join(dir, "audit.log")}
	if err := os.WriteFile(o.PolicyFile, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\n"+policy), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := audit.New(o, metrics.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, func() []audit.Event {
		a.Close()
		f, err := os.Open(o.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []audit.Event
		s := bufio.NewScanner(f)
		for s.Scan() {
			var ev audit.Event
			if err := json.Unmarshal(s.Bytes(), &ev); err != nil {
				t.Fatalf("line %s: %v", s.Text(), err)
			}
			out = append(out, ev)
		}
		return out
	}
}

// onlyAllowed allows the users named, and no one else.
type onlyAllowed []string

func (o onlyAllowed) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, n := range o {
		if a.User != nil && a.User.Name == n {
			return authorizer.Allow, "allowed as " + n, nil
		}
	}
	return authorizer.NoOpinion, "not on the list", nil
}

// auditedChain is the apiserver's chain around next: tokens
// "<name>-token" authenticate alice, bob and carol; alice and carol are
// allowed everything.
func auditedChain(a *audit.Auditor, next http.Handler) http.Handler {
	set := authenticator.NewTokenSet()
	for _, n := range []string{"alice", "bob", "carol"} {
		set.Add(n+"-token", &user.Info{Name: n, Groups: []string{"people"}})
	}
	z := onlyAllowed{"alice", "carol"}
	h := WithAuthorization(next, z)
	h = WithImpersonation(h, z)
	h = WithAudit(h, a, func(r *http.Request) bool {
		info, _ := request.RequestInfoFrom(r.Context())
		return info.Verb == "watch"
	})
	h = WithAuthentication(h, authenticator.Union{authenticator.BearerToken{Token: set}}, false)
	h = request.WithRequestInfoFilter(h)
	h = recoverWith500(h)
	return WithAuditInit(h, a)
}

// recoverWith500 answers a panic as the apiserver's recovery filter does.
func recoverWith500(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if recover() != nil {
				w.WriteHeader(http.StatusInternalServerError)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func serve(h http.Handler, method, target, token, body string, header ...string) *httptest.ResponseRecorder {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	r.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func stagesOf(evs []audit.Event) []audit.Stage {
	out := make([]audit.Stage, len(evs))
	for i, ev := range evs {
		out[i] = ev.Stage
	}
	return out
}

// createConfigMap answers a create with the object it read, given a uid.
var createConfigMap = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u-1"}}` + "\n"))
})

const configMapBody = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}`

func TestWithAudit_CreateRecordsTheBodiesItsLevelAsksFor(t *testing.T) {
	const response = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u-1"}}`
	for _, tc := range []struct {
		level                    audit.Level
		wantRequest, wantReponse string
	}{
		{audit.LevelMetadata, "", ""},
		{audit.LevelRequest, configMapBody, ""},
		{audit.LevelRequestResponse, configMapBody, response},
	} {
		t.Run(string(tc.level), func(t *testing.T) {
			a, events := newAuditor(t, "rules:\n- level: "+string(tc.level)+"\n")
			w := serve(auditedChain(a, createConfigMap), "POST", "/api/v1/namespaces/ns/configmaps?fieldManager=m", "alice-token", configMapBody)
			if w.Code != http.StatusCreated {
				t.Fatalf("code %d", w.Code)
			}
			evs := events()
			if got := stagesOf(evs); !reflect.DeepEqual(got, []audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}) {
				t.Fatalf("stages %v", got)
			}
			received, done := evs[0], evs[1]
			if received.RequestObject != nil || received.ResponseStatus != nil || received.Annotations != nil {
				t.Errorf("RequestReceived knows the future: %+v", received)
			}
			if done.AuditID != received.AuditID || done.Level != tc.level || done.Verb != "create" ||
				done.RequestURI != "/api/v1/namespaces/ns/configmaps?fieldManager=m" || done.User.Username != "alice" {
				t.Errorf("event %+v", done)
			}
			// The body names the object created, at every level.
			if want := (audit.ObjectReference{Resource: "configmaps", Namespace: "ns", Name: "a", APIVersion: "v1"}); *done.ObjectRef != want {
				t.Errorf("objectRef %+v, want %+v", *done.ObjectRef, want)
			}
			if done.ResponseStatus == nil || done.ResponseStatus.Code != http.StatusCreated {
				t.Errorf("responseStatus %+v", done.ResponseStatus)
			}
			if string(done.RequestObject) != tc.wantRequest || string(done.ResponseObject) != tc.wantReponse {
				t.Errorf("requestObject %s, responseObject %s", done.RequestObject, done.ResponseObject)
			}
			want := map[string]string{audit.DecisionAnnotation: "allow", audit.ReasonAnnotation: "allowed as alice"}
			if !reflect.DeepEqual(done.Annotations, want) {
				t.Errorf("annotations %v, want %v", done.Annotations, want)
			}
		})
	}
}

func TestWithAudit_WatchIsRecordedWhenItStartsAndEndsButNotItsStream(t *testing.T) {
	a, events := newAuditor(t, "rules:\n- level: RequestResponse\n")
	watch := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap"}}` + "\n"))
	})
	w := serve(auditedChain(a, watch), "GET", "/api/v1/configmaps?watch=true", "alice-token", "")
	if w.Code != http.StatusOK || !w.Flushed {
		t.Fatalf("code %d, flushed %v", w.Code, w.Flushed)
	}
	evs := events()
	want := []audit.Stage{audit.StageRequestReceived, audit.StageResponseStarted, audit.StageResponseComplete}
	if got := stagesOf(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("stages %v, want %v", got, want)
	}
	for _, ev := range evs[1:] {
		if ev.Verb != "watch" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != http.StatusOK || ev.ResponseObject != nil {
			t.Errorf("%s: %+v", ev.Stage, ev)
		}
	}
}

func TestWithAudit_OmitsTheStagesThePolicyOmits(t *testing.T) {
	a, events := newAuditor(t, "omitStages: [RequestReceived]\nrules:\n- level: Metadata\n  verbs: [watch]\n  omitStages: [ResponseStarted]\n- level: Metadata\n")
	h := auditedChain(a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	serve(h, "GET", "/api/v1/configmaps?watch=1", "alice-token", "")
	serve(h, "GET", "/api/v1/configmaps", "alice-token", "")
	evs := events()
	if got := stagesOf(evs); !reflect.DeepEqual(got, []audit.Stage{audit.StageResponseComplete, audit.StageResponseComplete}) {
		t.Fatalf("stages %v", got)
	}
	if evs[0].Verb != "watch" || evs[1].Verb != "list" {
		t.Errorf("verbs %s, %s", evs[0].Verb, evs[1].Verb)
	}
}

func TestWithAudit_PanicIsRecordedAndStillAnswered500(t *testing.T) {
	a, events := newAuditor(t, "rules:\n- level: Metadata\n")
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	w := serve(auditedChain(a, boom), "GET", "/api/v1/namespaces/ns/configmaps/a", "alice-token", "")
	if w.Code != http.StatusInternalServerError {
		t.Errorf("code %d, want 500", w.Code)
	}
	evs := events()
	if got := stagesOf(evs); !reflect.DeepEqual(got, []audit.Stage{audit.StageRequestReceived, audit.StagePanic}) {
		t.Fatalf("stages %v", got)
	}
	s := evs[1].ResponseStatus
	if s == nil || s.Code != 500 || s.Status != "Failure" || s.Reason != "InternalError" || s.Message != "APIServer panic'd: boom" {
		t.Errorf("responseStatus %+v", s)
	}
}

func TestWithAudit_RecordsDenialsAndImpersonation(t *testing.T) {
	a, events := newAuditor(t, "rules:\n- level: Metadata\n")
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := user.From(r.Context())
		audit.AddAnnotation(r.Context(), "served-as", u.Name)
	})
	h := auditedChain(a, ok)
	if w := serve(h, "GET", "/api/v1/namespaces/ns/configmaps/a", "bob-token", ""); w.Code != http.StatusForbidden {
		t.Fatalf("bob: code %d", w.Code)
	}
	if w := serve(h, "GET", "/api/v1/namespaces/ns/configmaps/a", "alice-token", "", "Impersonate-User", "carol"); w.Code != http.StatusOK {
		t.Fatalf("alice as carol: code %d", w.Code)
	}
	evs := events()
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4", len(evs))
	}
	denied, impersonated := evs[1], evs[3]
	s := denied.ResponseStatus
	if s == nil || s.Code != 403 || s.Reason != "Forbidden" || !strings.Contains(s.Message, `User "bob" cannot get resource "configmaps"`) {
		t.Errorf("denial status %+v", s)
	}
	if want := map[string]string{audit.DecisionAnnotation: "forbid", audit.ReasonAnnotation: "not on the list"}; !reflect.DeepEqual(denied.Annotations, want) {
		t.Errorf("denial annotations %v, want %v", denied.Annotations, want)
	}
	if impersonated.User.Username != "alice" || impersonated.ImpersonatedUser == nil || impersonated.ImpersonatedUser.Username != "carol" ||
		!reflect.DeepEqual(impersonated.ImpersonatedUser.Groups, []string{user.AllAuthenticated}) {
		t.Errorf("impersonated event: user %+v, impersonatedUser %+v", impersonated.User, impersonated.ImpersonatedUser)
	}
	if impersonated.Annotations["served-as"] != "carol" || impersonated.Annotations[audit.DecisionAnnotation] != "allow" {
		t.Errorf("impersonated annotations %v", impersonated.Annotations)
	}
}

func TestWithAuditInit_RecordsFailedAuthenticationWithoutAUser(t *testing.T) {
	a, events := newAuditor(t, "rules:\n- level: Metadata\n")
	w := serve(auditedChain(a, http.NotFoundHandler()), "GET", "/api/v1/namespaces", "wrong", "")
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("code %d", w.Code)
	}
	evs := events()
	if len(evs) != 1 {
		t.Fatalf("events %+v, want one", evs)
	}
	ev := evs[0]
	if ev.Stage != audit.StageResponseStarted || ev.User.Username != "" || ev.Verb != "list" || ev.ObjectRef == nil || ev.ObjectRef.Resource != "namespaces" {
		t.Errorf("event %+v", ev)
	}
	if s := ev.ResponseStatus; s == nil || s.Code != 401 || s.Reason != "Unauthorized" || s.Message != "Unauthorized" {
		t.Errorf("responseStatus %+v", s)
	}
}

func TestWithAuditInit_AuditIDIsTheClientsOrNewAndAnswered(t *testing.T) {
	a, events := newAuditor(t, "rules:\n- level: None\n  nonResourceURLs: [/healthz]\n- level: Metadata\n")
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, tc := range []struct {
		name string
		a    *audit.Auditor
		path string
	}{
		{"audited", a, "/version"},
		{"not audited by the policy", a, "/healthz"},
		{"without auditing", nil, "/version"},
	} {
		h := auditedChain(tc.a, ok)
		if got := serve(h, "GET", tc.path, "alice-token", "", audit.HeaderAuditID, "mine").Header().Get("Audit-Id"); got != "mine" {
			t.Errorf("%s: Audit-Id %q, want the client's", tc.name, got)
		}
		if _, err := uuid.Parse(serve(h, "GET", tc.path, "alice-token", "").Header().Get("Audit-Id")); err != nil {
			t.Errorf("%s: generated Audit-Id: %v", tc.name, err)
		}
	}
	evs := events()
	if len(evs) != 4 || evs[0].AuditID != "mine" || evs[2].AuditID == "mine" || evs[2].AuditID != evs[3].AuditID {
		t.Errorf("audit IDs of %+v", evs)
	}
	// A handler that writes nothing lets the connection close with a 200.
	if s := evs[1].ResponseStatus; s == nil || s.Code != 200 || s.Message != "Connection closed early" {
		t.Errorf("responseStatus %+v", s)
	}
}
