package authorizer

import (
	"context"
	"errors"
	"testing"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// fixed answers every question the same way and counts the questions.
type fixed struct {
	d      Decision
	reason string
	err    error
	asked  *int
}

func (f fixed) Authorize(context.Context, Attributes) (Decision, string, error) {
	*f.asked++
	return f.d, f.reason, f.err
}

func TestUnion_FirstOpinionDecides(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name       string
		answers    []fixed
		want       Decision
		wantReason string
		wantErr    error
		wantAsked  int
	}{
		{"nobody has an opinion", []fixed{{d: NoOpinion}, {d: NoOpinion}}, NoOpinion, "", nil, 2},
		{"an allow ends the union", []fixed{{d: NoOpinion}, {d: Allow, reason: "bound"}, {d: Deny}}, Allow, "bound", nil, 2},
		{"a deny ends the union", []fixed{{d: Deny, reason: "no"}, {d: Allow}}, Deny, "no", nil, 1},
		{"a failure ends the union", []fixed{{d: NoOpinion, err: boom}, {d: Allow}}, NoOpinion, "", boom, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			var u Union
			for _, a := range tc.answers {
				a.asked = &asked
				u = append(u, a)
			}
			d, reason, err := u.Authorize(context.Background(), Attributes{User: &user.Info{Name: "alice"}, Verb: "get"})
			if d != tc.want || reason != tc.wantReason || !errors.Is(err, tc.wantErr) || asked != tc.wantAsked {
				t.Errorf("got %v %q %v after %d, want %v %q %v after %d", d, reason, err, asked, tc.want, tc.wantReason, tc.wantErr, tc.wantAsked)
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
