// Package user owns who a request comes from: the user information
// authentication finds and authorization, admission and audit read, and
// the request context that carries it.
package user

import "context"

// Well-known users and groups, as kube names them.
const (
	Anonymous          = "system:anonymous"
	AllAuthenticated   = "system:authenticated"
	AllUnauthenticated = "system:unauthenticated"
	SystemPrivileged   = "system:masters"
)

// Info is an authenticated (or anonymous) user.
type Info struct {
	Name   string
	UID    string
	Groups []string
	// Extra carries what an authenticator knows beyond name and groups.
	Extra map[string][]string
}

type key struct{}

// WithUser returns ctx carrying u.
func WithUser(ctx context.Context, u *Info) context.Context {
	return context.WithValue(ctx, key{}, u)
}

// From returns the user of a request that went through authentication.
func From(ctx context.Context) (*Info, bool) {
	u, ok := ctx.Value(key{}).(*Info)
	return u, ok
}
