package authorizer

import (
	"context"
	"errors"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// fixed answers the same whatever it is asked.
type fixed struct {
	d      Decision
	reason string
	err    error
}

func (f fixed) Authorize(context.Context, Attributes) (Decision, string, error) {
	return f.d, f.reason, f.err
}

func TestUnion_FirstDecisionWinsAndNoOpinionKeepsEveryReason(t *testing.T) {
	broken := errors.New("webhook down")
	cases := []struct {
		name   string
		union  Union
		d      Decision
		reason string
		err    string
	}{
		{"an allow ends the asking", Union{fixed{d: NoOpinion, reason: "first"}, fixed{d: Allow, reason: "second"}, fixed{d: Deny}}, Allow, "second", ""},
		{"a deny ends the asking", Union{fixed{d: Deny, reason: "no"}, fixed{d: Allow}}, Deny, "no", ""},
		{"no opinion joins the reasons by line", Union{fixed{reason: "RBAC: a not found"}, fixed{}, fixed{reason: "other"}}, NoOpinion, "RBAC: a not found\nother", ""},
		{"an error does not end the asking", Union{fixed{err: broken}, fixed{d: Allow, reason: "yes"}}, Allow, "yes", ""},
		{"errors of those without opinion come back", Union{fixed{err: broken, reason: "failed"}, fixed{}}, NoOpinion, "failed", "webhook down"},
		{"nobody asked", Union{}, NoOpinion, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := tc.union.Authorize(context.Background(), Attributes{})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if d != tc.d || reason != tc.reason || gotErr != tc.err {
				t.Fatalf("got %v %q %q, want %v %q %q", d, reason, gotErr, tc.d, tc.reason, tc.err)
			}
		})
	}
}

func TestPrivilegedGroups_AllowsMembersOnly(t *testing.T) {
	p := PrivilegedGroups{"system:masters"}
	for _, tc := range []struct {
		name string
		u    *user.Info
		want Decision
	}{
		{"member", &user.Info{Name: "admin", Groups: []string{"system:authenticated", "system:masters"}}, Allow},
		{"not a member", &user.Info{Name: "alice", Groups: []string{"system:authenticated"}}, NoOpinion},
		{"no user", nil, NoOpinion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d, _, _ := p.Authorize(context.Background(), Attributes{User: tc.u}); d != tc.want {
				t.Errorf("got %v, want %v", d, tc.want)
			}
		})
	}
}

// kube's AlwaysDeny has no opinion, with a reason: the modes after it
// still decide, and a denial says why.
func TestAlwaysDeny_LeavesTheDecisionToTheModesAfterIt(t *testing.T) {
	d, reason, err := Union{AlwaysDeny{}}.Authorize(context.Background(), Attributes{})
	if d != NoOpinion || reason != "Everything is forbidden." || err != nil {
		t.Fatalf("AlwaysDeny alone: %v %q %v", d, reason, err)
	}
	if d, _, _ := (Union{AlwaysDeny{}, AlwaysAllow{}}).Authorize(context.Background(), Attributes{}); d != Allow {
		t.Fatalf("AlwaysDeny,AlwaysAllow: %v", d)
	}
}
