package apiserver

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/serviceaccount"
	"github.com/cronplane/cronplane/pkg/registry"
	"github.com/cronplane/cronplane/pkg/registry/core"
	"github.com/cronplane/cronplane/pkg/registry/generic"
	"github.com/cronplane/cronplane/pkg/registry/rest"
	"github.com/cronplane/cronplane/pkg/storage"
)

// ServiceAccountOptions configure service account tokens: how they are
// signed, and which are accepted. Zero values take the defaults.
type ServiceAccountOptions struct {
	// SigningKeyFile is the PEM private key (RSA or ECDSA) that signs
	// tokens; empty means <data-dir>/service-account.key, generated on the
	// first start and kept, so that tokens outlive restarts.
	SigningKeyFile string
	// KeyFiles hold PEM public or private keys (RSA or ECDSA) whose tokens
	// are accepted besides the signing key's.
	KeyFiles []string
	// Issuers: the first names the issuer of new tokens, and tokens of any
	// of them are accepted. Empty means serviceaccount.DefaultIssuer.
	Issuers []string
	// APIAudiences are the audiences of the API: a token must name one of
	// them, and a TokenRequest naming none gets them. Empty means Issuers.
	APIAudiences []string
	// MaxTokenExpiration caps the lifetime a TokenRequest gets; 0 leaves
	// it uncapped, any other value must lie between an hour and 2^32 s.
	MaxTokenExpiration time.Duration
	// JWKSURI is where issuer discovery says the keys are; empty means
	// this server's /openid/v1/jwks.
	JWKSURI string
}

// AddFlags binds the options to kube-apiserver's flags.
func (o *ServiceAccountOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.SigningKeyFile, "service-account-signing-key-file", o.SigningKeyFile, "PEM private key (RSA or ECDSA) that signs service account tokens (default <data-dir>/"+generatedSigningKey+", generated on first start)")
	fs.StringArrayVar(&o.KeyFiles, "service-account-key-file", o.KeyFiles, "PEM file of public or private keys (RSA or ECDSA) whose service account tokens are accepted besides the signing key's; repeatable")
	fs.StringArrayVar(&o.Issuers, "service-account-issuer", o.Issuers, "issuer (iss) of service account tokens; repeatable: the first issues new tokens, all are accepted (default "+serviceaccount.DefaultIssuer+")")
	fs.StringSliceVar(&o.APIAudiences, "api-audiences", o.APIAudiences, "audiences of the API: a service account token must name one of them, and a TokenRequest naming none gets them (default: the issuers)")
	fs.DurationVar(&o.MaxTokenExpiration, "service-account-max-token-expiration", o.MaxTokenExpiration, "longest lifetime a TokenRequest gets; longer requests are shortened to it (0: no limit)")
	fs.StringVar(&o.JWKSURI, "service-account-jwks-uri", o.JWKSURI, "https URL of the service account keys that /.well-known/openid-configuration names (default: this server's /openid/v1/jwks)")
}

// Validate refuses what kube-apiserver refuses.
func (o *ServiceAccountOptions) Validate() error {
	var errs []error
	if len(o.Issuers) > 0 {
		errs = append(errs, validateIssuers(o.Issuers))
	}
	if m := o.MaxTokenExpiration; m != 0 && (m < time.Hour || m > (1<<32)*time.Second) {
		errs = append(errs, errors.New("the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"))
	}
	if o.JWKSURI != "" {
		if u, err := url.Parse(o.JWKSURI); err != nil {
			errs = append(errs, fmt.Errorf("service-account-jwks-uri must be a valid URL: %w", err))
		} else if u.Scheme != "https" {
			errs = append(errs, fmt.Errorf("service-account-jwks-uri requires https scheme, parsed as: %s", u.String()))
		}
	}
	return errors.Join(errs...)
}

// generatedSigningKey is the file in the data directory that holds the
// signing key when none is given.
const generatedSigningKey = "service-account.key"

// serviceAccounts is the server's side of service account tokens: the
// signer, what verifies tokens, and the reads of the objects they name.
type serviceAccounts struct {
	signer        *serviceaccount.Signer
	keys          []crypto.PublicKey
	issuers       []string
	audiences     []string
	maxExpiration time.Duration
	jwksURI       string
	// tokenIDs is kube's ServiceAccountTokenJTI gate: tokens carry a jti,
	// which names the credential of those they authenticate.
	tokenIDs bool
	// objects serve the accounts and secrets tokens name.
	objects resourceLookup
}

// resourceLookup finds what serves a resource: the server's registry.
type resourceLookup interface {
	Lookup(gvr schema.GroupVersionResource) (*registry.Entry, bool)
}

// newServiceAccounts loads the keys of the completed options, generating
// the signing key in dataDir when none is given; tokens name objects
// that objects serve, and carry IDs when tokenIDs is on.
func newServiceAccounts(o ServiceAccountOptions, dataDir string, objects resourceLookup, tokenIDs bool, logger klog.Logger) (*serviceAccounts, error) {
	sa := &serviceAccounts{issuers: o.Issuers, audiences: o.APIAudiences, maxExpiration: o.MaxTokenExpiration, jwksURI: o.JWKSURI, objects: objects, tokenIDs: tokenIDs}
	keyFile := o.SigningKeyFile
	if keyFile == "" {
		keyFile = filepath.Join(dataDir, generatedSigningKey)
		generated, err := ensureSigningKey(keyFile)
		if err != nil {
			return nil, fmt.Errorf("service account signing key: %w", err)
		}
		if generated {
			logger.Info("Generated the service account signing key", "file", keyFile)
		}
	}
	key, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("service account signing key: %w", err)
	}
	if sa.signer, err = serviceaccount.NewSigner(sa.issuers[0], key); err != nil {
		return nil, err
	}
	sa.keys = []crypto.PublicKey{sa.signer.PublicKey()}
	for _, f := range o.KeyFiles {
		keys, err := keyutil.PublicKeysFromFile(f)
		if err != nil {
			return nil, fmt.Errorf("service account key file: %w", err)
		}
		for _, k := range keys {
			sa.keys = append(sa.keys, k)
		}
	}
	logger.Info("Service account tokens", "issuer", sa.issuers[0], "signingKey", keyFile, "verifyingKeys", len(sa.keys), "apiAudiences", sa.audiences)
	return sa, nil
}

// validateIssuers refuses what kube-apiserver refuses.
func validateIssuers(issuers []string) error {
	seen := map[string]bool{}
	var errs []error
	for _, iss := range issuers {
		switch {
		case iss == "":
			errs = append(errs, errors.New("service-account-issuer should not be an empty string"))
			continue
		case seen[iss]:
			errs = append(errs, fmt.Errorf("service-account-issuer %q is already specified", iss))
			continue
		case strings.Contains(iss, ":"):
			if _, err := url.Parse(iss); err != nil {
				errs = append(errs, fmt.Errorf("service-account-issuer %q contained a ':' but was not a valid URL: %v", iss, err))
				continue
			}
		}
		seen[iss] = true
	}
	return errors.Join(errs...)
}

// ensureSigningKey writes a new RSA key (as kubeadm makes it: 2048 bits,
// RS256 tokens) to path unless a file is there, and reports whether it
// did. The file appears whole or not at all.
func ensureSigningKey(path string) (bool, error) {
	if _, err := os.Stat(path); err == nil || !os.IsNotExist(err) {
		return false, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return false, err
	}
	data, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, path)
}

// resource is the serviceaccounts registration, with its token
// subresource.
func (sa *serviceAccounts) resource() *generic.Resource {
	return core.ServiceAccountResource(&core.TokenRequests{
		Signer:        sa.signer,
		Audiences:     sa.audiences,
		MaxExpiration: sa.maxExpiration,
		TokenIDs:      sa.tokenIDs,
		Secrets:       currentObjects{sa},
		Pods:          currentObjects{sa},
	})
}

// authenticator accepts the tokens of the configured issuers and keys.
func (sa *serviceAccounts) authenticator() authenticator.Token {
	return serviceaccount.NewAuthenticator(serviceaccount.AuthenticatorConfig{
		Issuers:       sa.issuers,
		Keys:          sa.keys,
		Audiences:     sa.audiences,
		Getter:        cachedObjects{sa},
		CredentialIDs: sa.tokenIDs,
	})
}

var (
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	secretsGVR         = corev1.SchemeGroupVersion.WithResource("secrets")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
)

// get reads an object through what serves its resource. A cached read
// comes from the watch cache as it is (resourceVersion 0), and only a
// miss, which may be an object the cache has not seen yet, is read again
// as it is now, as kube falls back to a live lookup.
func (sa *serviceAccounts) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, cached bool) (runtime.Object, error) {
	e, ok := sa.objects.Lookup(gvr)
	if !ok {
		return nil, fmt.Errorf("%s are not served", gvr.Resource)
	}
	g := e.Storage.(rest.Getter)
	if cached {
		obj, err := g.Get(ctx, namespace, name, &metav1.GetOptions{ResourceVersion: "0"})
		if !apierrors.IsNotFound(err) {
			return storage.Unwrap(obj), err
		}
	}
	obj, err := g.Get(ctx, namespace, name, &metav1.GetOptions{})
	return storage.Unwrap(obj), err
}

// cachedObjects are the authenticator's reads: one per request with a
// token, so from the watch cache.
type cachedObjects struct{ sa *serviceAccounts }

func (o cachedObjects) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := o.sa.get(ctx, serviceAccountsGVR, namespace, name, true)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

func (o cachedObjects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, err := o.sa.get(ctx, secretsGVR, namespace, name, true)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

func (o cachedObjects) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := o.sa.get(ctx, podsGVR, namespace, name, true)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// currentObjects are a TokenRequest's reads: the Secret or Pod a new
// token is bound to as it is now, so that its uid is the latest.
type currentObjects struct{ sa *serviceAccounts }

func (o currentObjects) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := o.sa.get(ctx, podsGVR, namespace, name, false)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func (o currentObjects) GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, err := o.sa.get(ctx, secretsGVR, namespace, name, false)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

// installIssuerDiscovery serves service account issuer discovery, as kube
// does when the issuer is an https URL without query or fragment: the
// OpenID configuration and the keys, to GET only, cacheable for an hour.
// externalURL is this server's address, known once it listens: the default
// jwks_uri is below it.
func (sa *serviceAccounts) installIssuerDiscovery(r *mux.Router, externalURL func() string, logger klog.Logger) {
	if _, err := serviceaccount.NewOpenIDMetadata(sa.issuers[0], "https://jwks.invalid", sa.keys); err != nil {
		// As kube, a server whose issuer cannot be published runs on
		// without discovery, and says why as an error.
		logger.Error(err, "Not serving service account issuer discovery")
		return
	}
	var (
		once     sync.Once
		metadata *serviceaccount.OpenIDMetadata
		err      error
	)
	load := func() (*serviceaccount.OpenIDMetadata, error) {
		once.Do(func() {
			jwksURI := sa.jwksURI
			if jwksURI == "" {
				jwksURI = externalURL() + jwksPath
			}
			metadata, err = serviceaccount.NewOpenIDMetadata(sa.issuers[0], jwksURI, sa.keys)
		})
		return metadata, err
	}
	serve := func(contentType string, body func(*serviceaccount.OpenIDMetadata) []byte) http.HandlerFunc {
		return getOnly(func(w http.ResponseWriter, _ *http.Request) {
			m, err := load()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Cache-Control", "public, max-age=3600")
			_, _ = w.Write(body(m))
		})
	}
	config := serve("application/json", func(m *serviceaccount.OpenIDMetadata) []byte { return m.Configuration })
	keys := serve("application/jwk-set+json", func(m *serviceaccount.OpenIDMetadata) []byte { return m.KeySet })
	// As kube's router, any number of trailing slashes names the same
	// document; authorization has already seen the path as sent, so the
	// bootstrap role grants only the bare path and one slash.
	r.Handle(openIDConfigurationPath+"{slashes:/*}", config)
	r.Handle(jwksPath+"{slashes:/*}", keys)
}

const (
	openIDConfigurationPath = "/.well-known/openid-configuration"
	jwksPath                = "/openid/v1/jwks"
)
