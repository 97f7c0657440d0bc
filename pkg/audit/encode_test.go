package audit

import (
	"encoding/json"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func encodeTestEvents() []Event {
	at := metav1.NewMicroTime(time.Date(2026, 11, 24, 10, 0, 0, 123456789, time.FixedZone("x", 3600)))
	return []Event{
		{},
		{TypeMeta: metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"}, Level: LevelMetadata, AuditID: "a-1", Stage: StageResponseComplete,
			RequestURI: "/api/v1/namespaces/ns/configmaps?limit=500&labelSelector=a%3Db", Verb: "list",
			User:      authenticationv1.UserInfo{Username: "alice", UID: "u", Groups: []string{"devs", "system:authenticated"}, Extra: map[string]authenticationv1.ExtraValue{"z": {"1"}, "a": nil, "m": {}}},
			SourceIPs: []string{"127.0.0.1"}, UserAgent: "kubectl/v1.29.0 <\"quoted\"> & \u2028 \t\x01 \xff é",
			ObjectRef:                &ObjectReference{Resource: "configmaps", Namespace: "ns", APIVersion: "v1"},
			ResponseStatus:           &metav1.Status{Code: 200},
			RequestReceivedTimestamp: at, StageTimestamp: at,
			Annotations: map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": `RBAC: allowed by "x"`},
		},
		{Level: LevelRequestResponse, ImpersonatedUser: &authenticationv1.UserInfo{Username: "bob"},
			ResponseStatus: &metav1.Status{Status: metav1.StatusFailure, Message: "nope", Reason: metav1.StatusReasonForbidden, Code: 403,
				Details: &metav1.StatusDetails{Name: "a", Kind: "configmaps"}},
			RequestObject:  json.RawMessage(`{ "kind" : "ConfigMap", "data": {"a": "<b>"} }`),
			ResponseObject: json.RawMessage(`{"kind":"Status"}`),
			StageTimestamp: at,
		},
	}
}

func TestAppendJSON_EncodesAsEncodingJSON(t *testing.T) {
	for i, ev := range encodeTestEvents() {
		want, err := json.Marshal(&ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzAppendMicroTime_EncodesAsMicroTime(f *testing.F) {
	for _, ns := range []int64{0, 1, 1795513103123456789, -62135596800000000000 / 1000, 253402300799999999999 / 1000} {
		f.Add(ns)
	}
	f.Fuzz(func(t *testing.T, ns int64) {
		mt := metav1.NewMicroTime(time.Unix(0, ns))
		want, err := mt.MarshalJSON()
		if err != nil {
			t.Skip()
		}
		if got := appendMicroTime(nil, mt); string(got) != string(want) {
			t.Fatalf("appendMicroTime(%d) = %s, want %s", ns, got, want)
		}
	})
}

func FuzzAppendString_EncodesAsEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "<&>", "\u2028\u2029", "\x00\x1f\x7f", "\xff\xfe", "é中文", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkEncodeEvent(b *testing.B) {
	ev := encodeTestEvents()[1]
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := ev.appendJSON(make([]byte, 0, 512)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := json.Marshal(&ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
