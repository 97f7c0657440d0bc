package main

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/cronplane/cronplane/pkg/controllermanager"
)

// completedFromFlags binds the options to flags as the command does,
// parses args and completes them, without an apiserver.
func completedFromFlags(t *testing.T, args ...string) (controllermanager.CompletedConfig, error) {
	t.Helper()
	opts := controllermanager.DefaultOptions()
	fs := pflag.NewFlagSet("controller-manager", pflag.ContinueOnError)
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
		want []string
	}{
		{name: "unknown controller", args: []string{"--controllers=*,-bogus"},
			want: []string{`"bogus"`}},
		{name: "renew deadline not under the lease duration", args: []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"},
			want: []string{"leaseDuration must be greater than renewDeadline"}},
		{name: "retry period too long for the renew deadline", args: []string{"--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=2s"},
			want: []string{"renewDeadline must be greater than retryPeriod*JitterFactor"}},
		{name: "port out of range", args: []string{"--secure-port=-2"},
			want: []string{"--secure-port -2 must be between 0 and 65535"}},
		{name: "hidden metrics of a release that is not the previous one", args: []string{"--show-hidden-metrics-for-version=1.20"},
			want: []string{"--show-hidden-metrics-for-version must be omitted or have the value 1.28"}},
		{name: "every concern's error at once", args: []string{"--controllers=nope", "--secure-port=70000", "--leader-elect-retry-period=0s"},
			want: []string{`"nope"`, "--secure-port 70000", "retryPeriod must be greater than zero"}},
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
		{"--controllers=cronjob,namespace", "--secure-port=-1"},
		// Durations only matter to an elector.
		{"--leader-elect=false", "--leader-elect-retry-period=0s"},
	} {
		if _, err := completedFromFlags(t, args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
}
