package audit

import (
	"context"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Annotations the server records. Any stage of a request may add its
// own with AddAnnotation.
const (
	// DecisionAnnotation is the authorization decision: DecisionAllow or
	// DecisionForbid; ReasonAnnotation the authorizer's reason.
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
	DecisionAllow      = "allow"
	DecisionForbid     = "forbid"
	// DeprecatedAnnotation ("true") marks a request to a deprecated API
	// version; RemovedReleaseAnnotation names the release that removes it
	// ("1.32").
	DeprecatedAnnotation     = "k8s.io/deprecated"
	RemovedReleaseAnnotation = "k8s.io/removed-release"
)

// Context is the audit record of one request as it is made. The
// outermost filter puts it in the request's context with the audit ID,
// so that every later stage may annotate it; the audit filter fills it
// in once the policy has chosen a level.
type Context struct {
	mu sync.Mutex
	// evaluated is set when the policy has chosen config.
	evaluated bool
	// completed is set once the last stage is emitted: the writer then
	// owns event, and nothing changes it any more.
	completed bool
	// objectLogged is set once the handler recorded the decoded request
	// object (LogRequestObject), which the wire body then leaves alone.
	objectLogged bool
	config       RequestConfig
	event        Event
}

type contextKey struct{}

// WithContext returns ctx carrying a new audit record for the request
// with that audit ID, received at that time.
func WithContext(ctx context.Context, auditID string, received time.Time) (context.Context, *Context) {
	c := &Context{event: Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: GroupVersion, Kind: "Event"},
		AuditID:                  types.UID(auditID),
		RequestReceivedTimestamp: metav1.NewMicroTime(received),
	}}
	return context.WithValue(ctx, contextKey{}, c), c
}

// ContextFrom returns the audit record of a request, or nil.
func ContextFrom(ctx context.Context) *Context {
	c, _ := ctx.Value(contextKey{}).(*Context)
	return c
}

// Evaluated reports whether the policy has been applied to the request,
// which the audit filter does once authentication has passed.
func (c *Context) Evaluated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evaluated
}

// AddAnnotation records key=value on the request's audit events from now
// on. The first value of a key stays; a request the policy does not
// audit records nothing. It is safe from any goroutine serving the
// request.
func AddAnnotation(ctx context.Context, key, value string) {
	c := ContextFrom(ctx)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.completed || c.evaluated && c.config.Level == LevelNone {
		return
	}
	if old, ok := c.event.Annotations[key]; ok {
		if old != value {
			klog.InfoS("Audit annotation already set", "key", key, "auditID", c.event.AuditID, "value", old, "ignored", value)
		}
		return
	}
	if c.event.Annotations == nil {
		c.event.Annotations = map[string]string{}
	}
	c.event.Annotations[key] = value
}

// LogImpersonatedUser records whom the request acts as.
func LogImpersonatedUser(ctx context.Context, u *user.Info) {
	c := ContextFrom(ctx)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.completed || c.evaluated && c.config.Level == LevelNone {
		return
	}
	info := userInfo(u)
	c.event.ImpersonatedUser = &info
}

func userInfo(u *user.Info) authenticationv1.UserInfo {
	if u == nil {
		return authenticationv1.UserInfo{}
	}
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authenticationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}
