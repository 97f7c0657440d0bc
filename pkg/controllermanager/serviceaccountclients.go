package controllermanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/cronplane/cronplane/pkg/version"
)

// Token lifetimes of the controllers' accounts, as kube asks for them: an
// hour, renewed when 80% of it has passed.
const (
	controllerTokenSeconds = 60 * 60
	refreshAtPercent       = 80
	// tokenRequestTimeout bounds a token request made on the way to
	// another request.
	tokenRequestTimeout = 30 * time.Second
)

// serviceAccountClientBuilder gives each client name the credentials of
// the ServiceAccount of that name in kube-system, as kube-controller-manager
// does under --use-service-account-credentials, so that each controller
// acts, and is authorized, as itself. It creates the account if needed and
// obtains its tokens through the TokenRequest API with the manager's own
// credentials, renewing each before it expires. The clients of one name
// share one token.
type serviceAccountClientBuilder struct {
	// base has the server address and trust of the manager's
	// configuration, without its credentials.
	base *rest.Config
	// core acts with the manager's own credentials.
	core  typedcorev1.CoreV1Interface
	clock clock.PassiveClock

	mu      sync.Mutex
	sources map[string]*tokenSource
}

// newServiceAccountClientBuilder builds on root, whose credentials create
// the accounts and request their tokens.
func newServiceAccountClientBuilder(root configClientBuilder) (*serviceAccountClientBuilder, error) {
	client, err := root.Client("service-account-credentials")
	if err != nil {
		return nil, err
	}
	return &serviceAccountClientBuilder{
		base:    rest.AnonymousClientConfig(root.base),
		core:    client.CoreV1(),
		clock:   clock.RealClock{},
		sources: map[string]*tokenSource{},
	}, nil
}

// Config returns a configuration that authenticates with the tokens of
// the account name; its first request creates the account if needed.
func (b *serviceAccountClientBuilder) Config(name string) *rest.Config {
	cfg := rest.CopyConfig(b.base)
	cfg.UserAgent = version.UserAgent(program, name)
	cfg.Wrap(transport.ResettableTokenSourceWrapTransport(b.source(name)))
	return cfg
}

// Client makes sure the account name exists and returns a client that
// authenticates as it.
func (b *serviceAccountClientBuilder) Client(name string) (kubernetes.Interface, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
	defer cancel()
	if err := ensureAccount(ctx, b.core, name); err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(b.Config(name))
}

func (b *serviceAccountClientBuilder) source(name string) *tokenSource {
	b.mu.Lock()
	defer b.mu.Unlock()
	ts, ok := b.sources[name]
	if !ok {
		ts = &tokenSource{name: name, core: b.core, clock: b.clock}
		b.sources[name] = ts
	}
	return ts
}

// ensureAccount creates kube-system/name unless it exists.
func ensureAccount(ctx context.Context, core typedcorev1.CoreV1Interface, name string) error {
	accounts := core.ServiceAccounts(metav1.NamespaceSystem)
	_, err := accounts.Get(ctx, name, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	_, err = accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// tokenSource hands out the current token of one account, asking for a
// new one once refreshAtPercent of its lifetime has passed. When asking
// fails, the current token serves until it expires.
type tokenSource struct {
	name  string
	core  typedcorev1.CoreV1Interface
	clock clock.PassiveClock

	mu        sync.Mutex
	token     *oauth2.Token
	refreshAt time.Time
	// obtained is the wall-clock time the token came, which the transport
	// compares with the start of a request the server refused.
	obtained time.Time
}

var _ transport.ResettableTokenSource = (*tokenSource)(nil)

func (ts *tokenSource) Token() (*oauth2.Token, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	now := ts.clock.Now()
	if ts.token != nil && now.Before(ts.refreshAt) {
		return ts.token, nil
	}
	token, lifetime, err := ts.request()
	if err != nil {
		if ts.token != nil && now.Before(ts.token.Expiry) {
			klog.ErrorS(err, "Renewing a service account token; the current one serves until it expires", "serviceAccount", klog.KRef(metav1.NamespaceSystem, ts.name), "expiry", ts.token.Expiry)
			return ts.token, nil
		}
		return nil, err
	}
	ts.token = &oauth2.Token{AccessToken: token, TokenType: "Bearer", Expiry: now.Add(lifetime)}
	ts.refreshAt = now.Add(lifetime * refreshAtPercent / 100)
	ts.obtained = time.Now()
	return ts.token, nil
}

// ResetTokenOlderThan drops a token obtained before t, when a request
// that started at t was refused as unauthenticated: the account may have
// been deleted and created again. The next request asks for a new one.
func (ts *tokenSource) ResetTokenOlderThan(t time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.obtained.Before(t) {
		ts.token = nil
	}
}

// request asks for a new token of the account, creating the account if it
// is missing, and returns it with its lifetime. The lifetime is the one
// the server granted (it may shorten the one asked for), counted from
// now, so that the clocks of the two sides need not agree.
func (ts *tokenSource) request() (string, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tokenRequestTimeout)
	defer cancel()
	if err := ensureAccount(ctx, ts.core, ts.name); err != nil {
		return "", 0, fmt.Errorf("service account %s/%s: %w", metav1.NamespaceSystem, ts.name, err)
	}
	seconds := int64(controllerTokenSeconds)
	tr, err := ts.core.ServiceAccounts(metav1.NamespaceSystem).CreateToken(ctx, ts.name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		return "", 0, fmt.Errorf("token of service account %s/%s: %w", metav1.NamespaceSystem, ts.name, err)
	}
	if tr.Status.Token == "" || tr.Spec.ExpirationSeconds == nil {
		return "", 0, fmt.Errorf("token of service account %s/%s: the answer has no token or lifetime", metav1.NamespaceSystem, ts.name)
	}
	return tr.Status.Token, time.Duration(*tr.Spec.ExpirationSeconds) * time.Second, nil
}
