package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cronplane/cronplane/pkg/apiserver"
)

// completedFromFlags binds the options to flags as the command does,
// parses args and completes them: no etcd, no listener, no file written.
func completedFromFlags(t *testing.T, args ...string) (apiserver.CompletedConfig, error) {
	t.Helper()
	opts := apiserver.DefaultOptions()
	fs := pflag.NewFlagSet("apiserver", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %v: %v", args, err)
	}
	return opts.Complete()
}

func TestComplete_RefusesBadFlagCombinationsBeforeAnythingStarts(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// want are substrings of the error, all of them reported at once.
		want []string
	}{
		{name: "unknown authorization mode", args: []string{"--authorization-mode=RBAC,Webhook"},
			want: []string{`authorization-mode "Webhook" is not a valid mode`}},
		{name: "authorization mode twice", args: []string{"--authorization-mode=RBAC,RBAC"},
			want: []string{`authorization-mode "RBAC" has mode specified more than once`}},
		{name: "negative in-flight limit", args: []string{"--max-requests-inflight=-1"},
			want: []string{"--max-requests-inflight can not be negative value"}},
		{name: "etcd client certificate without its key", args: []string{"--etcd-servers=https://127.0.0.1:2379", "--etcd-certfile=client.crt"},
			want: []string{"--etcd-certfile and --etcd-keyfile go together"}},
		{name: "port out of range", args: []string{"--secure-port=70000"},
			want: []string{"--secure-port 70000 must be between 0 and 65535"}},
		{name: "issuer given twice", args: []string{"--service-account-issuer=https://a", "--service-account-issuer=https://a"},
			want: []string{`service-account-issuer "https://a" is already specified`}},
		{name: "token expiration under an hour", args: []string{"--service-account-max-token-expiration=10m"},
			want: []string{"service-account-max-token-expiration must be between 1 hour and 2^32 seconds"}},
		{name: "hidden metrics of a release that is not the previous one", args: []string{"--show-hidden-metrics-for-version=1.27"},
			want: []string{"--show-hidden-metrics-for-version must be omitted or have the value 1.28"}},
		{name: "negative audit log age", args: []string{"--audit-log-maxage=-1"},
			want: []string{"--audit-log-maxage -1 can't be a negative number"}},
		{name: "runtime-config value neither true nor false", args: []string{"--runtime-config=batch/v1=maybe"},
			want: []string{"--runtime-config: invalid value batch/v1=maybe"}},
		{name: "runtime-config turning namespaces off", args: []string{"--runtime-config=api/all=false"},
			want: []string{"the core group version v1 cannot be disabled"}},
		{name: "runtime-config naming an unknown group", args: []string{"--runtime-config=storage.k8s.io/v1=true"},
			want: []string{"unknown api groups, versions or resources storage.k8s.io/v1"}},
		{name: "every concern's error at once",
			args: []string{"--authorization-mode=Webhook", "--request-timeout=-1s", "--audit-log-maxsize=-1", "--etcd-keyfile=client.key"},
			want: []string{`authorization-mode "Webhook"`, "--request-timeout can not be negative value", "--audit-log-maxsize -1", "--etcd-certfile and --etcd-keyfile go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := completedFromFlags(t, tc.args...)
			if err == nil {
				t.Fatalf("%v completed, want an error", tc.args)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestComplete_AcceptsTheDefaultsAndGoodCombinations(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"--authorization-mode=AlwaysAllow", "--runtime-config=batch/v1=false", "--service-account-max-token-expiration=2h"},
		{"--etcd-servers=https://127.0.0.1:2379", "--etcd-certfile=client.crt", "--etcd-keyfile=client.key", "--secure-port=0"},
	} {
		if _, err := completedFromFlags(t, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestComplete_DefaultTolerationSecondsAreKubesOrTheFlags(t *testing.T) {
	for _, tc := range []struct {
		args                []string
		notReady, unreached int64
	}{
		{nil, 300, 300},
		{[]string{"--default-not-ready-toleration-seconds=20", "--default-unreachable-toleration-seconds=8"}, 20, 8},
	} {
		c, err := completedFromFlags(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := c.Admission; got.DefaultNotReadyTolerationSeconds != tc.notReady || got.DefaultUnreachableTolerationSeconds != tc.unreached {
			t.Errorf("%v: not-ready %d s, unreachable %d s; want %d and %d", tc.args, got.DefaultNotReadyTolerationSeconds, got.DefaultUnreachableTolerationSeconds, tc.notReady, tc.unreached)
		}
	}
}
