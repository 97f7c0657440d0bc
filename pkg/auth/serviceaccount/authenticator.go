package serviceaccount

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cronplane/cronplane/pkg/auth/authenticator"
	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Getter reads the objects a token names. It answers from a cache where it
// can, since every request with a token asks; a missing object is an
// error for which apierrors.IsNotFound holds. The objects are read-only.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// leeway is the clock skew allowed on exp, nbf and iat, and how long a
// deletion may take to reach the objects a token names, as kube allows.
const leeway = jwt.DefaultLeeway

// signatureAlgorithms are those a token may be signed with: those of RSA
// and ECDSA keys.
var signatureAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
}

// AuthenticatorConfig configures an Authenticator.
type AuthenticatorConfig struct {
	// Issuers are the accepted issuers; a token of another issuer is not
	// recognized.
	Issuers []string
	// Keys are the public keys (*rsa.PublicKey, *ecdsa.PublicKey) a token
	// may be signed by.
	Keys []crypto.PublicKey
	// Audiences are the API's audiences, those a token is checked for
	// when the request asks for none (a TokenReview may ask for others).
	Audiences []string
	Getter    Getter
	// CredentialIDs names the token a user authenticated with (its jti)
	// in the user's extra, as kube's ServiceAccountTokenJTI gate does.
	CredentialIDs bool
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Authenticator authenticates bearer tokens issued by a Signer.
type Authenticator struct {
	cfg     AuthenticatorConfig
	issuers map[string]bool
}

// NewAuthenticator returns an authenticator of the tokens cfg accepts.
func NewAuthenticator(cfg AuthenticatorConfig) *Authenticator {
	a := &Authenticator{cfg: cfg, issuers: map[string]bool{}}
	for _, iss := range cfg.Issuers {
		a.issuers[iss] = true
	}
	if a.cfg.Now == nil {
		a.cfg.Now = time.Now
	}
	return a
}

// AuthenticateToken recognizes a JWT that names one of the accepted
// issuers; anything else is not recognized (ok false, no error), so that
// other authenticators may know it. A recognized token that does not
// verify (signature, times, audience) or whose account or bound Secret is
// gone or was re-created is refused with an error saying why, in kube's
// words. The token must be meant for one of the audiences ctx carries
// (authenticator.WithAudiences), or for the API when it carries none;
// those are the audiences it is good for.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	if strings.Count(token, ".") != 2 {
		return nil, false, nil
	}
	tok, err := jwt.ParseSigned(token, signatureAlgorithms)
	if err != nil {
		// kube's JOSE library parses a token of any algorithm (none
		// too), recognizes it by its issuer, then fails its signature.
		if iss, ok := otherAlgorithmIssuer(token); ok && a.issuers[iss] {
			return nil, false, errCryptoFailure
		}
		return nil, false, nil
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil || !a.issuers[unverified.Issuer] {
		return nil, false, nil
	}
	public, private, err := a.verify(tok)
	if err != nil {
		return nil, false, err
	}
	// A token without audiences is meant for the API.
	tokenAudiences := []string(public.Audience)
	if len(tokenAudiences) == 0 {
		tokenAudiences = a.cfg.Audiences
	}
	asked := authenticator.AudiencesFrom(ctx)
	if asked == nil {
		asked = a.cfg.Audiences
	}
	audiences := authenticator.Intersect(tokenAudiences, asked)
	if len(audiences) == 0 {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAudiences, asked)
	}
	now := a.cfg.Now()
	switch err := public.ValidateWithLeeway(jwt.Expected{Time: now}, leeway); {
	case errors.Is(err, jwt.ErrExpired):
		return nil, false, errors.New("service account token has expired")
	case errors.Is(err, jwt.ErrNotValidYet):
		return nil, false, errors.New("service account token is not valid yet")
	case errors.Is(err, jwt.ErrIssuedInTheFuture):
		return nil, false, errors.New("service account token is issued in the future")
	case err != nil:
		return nil, false, fmt.Errorf("service account token claims: %w", err)
	}
	if err := a.checkObjects(ctx, &private.Kubernetes, now); err != nil {
		return nil, false, err
	}
	k := private.Kubernetes
	u := &user.Info{
		Name:   UserName(k.Namespace, k.ServiceAccount.Name),
		UID:    k.ServiceAccount.UID,
		Groups: Groups(k.Namespace),
	}
	if a.cfg.CredentialIDs && public.ID != "" {
		u.Extra = map[string][]string{CredentialIDKey: {"JTI=" + public.ID}}
	}
	if k.Pod != nil {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[PodNameKey] = []string{k.Pod.Name}
		u.Extra[PodUIDKey] = []string{k.Pod.UID}
	}
	return &authenticator.Response{User: u, Audiences: audiences}, true, nil
}

// errCryptoFailure is kube's answer for a signature that does not verify,
// in the words of the JOSE library kube uses.
var errCryptoFailure = errors.New("square/go-jose: error in cryptographic primitive")

// verify checks the signature against each key in turn, so that keys can
// be rotated, and returns the claims; the errors are aggregated as kube
// aggregates them.
func (a *Authenticator) verify(tok *jwt.JSONWebToken) (*jwt.Claims, *privateClaims, error) {
	var errs []error
	for _, key := range a.cfg.Keys {
		public, private := &jwt.Claims{}, &privateClaims{}
		if err := tok.Claims(key, public, private); err != nil {
			if errors.Is(err, jose.ErrCryptoFailure) {
				err = errCryptoFailure
			}
			errs = append(errs, err)
			continue
		}
		return public, private, nil
	}
	return nil, nil, utilerrors.NewAggregate(errs)
}

// otherAlgorithmIssuer reads the issuer of a compact JWS whose parts
// decode, whatever algorithm its header names.
func otherAlgorithmIssuer(token string) (string, bool) {
	parts := strings.Split(token, ".")
	var decoded [3][]byte
	for i, p := range parts {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(p, "="))
		if err != nil {
			return "", false
		}
		decoded[i] = b
	}
	var header struct {
		Algorithm string `json:"alg"`
	}
	var claims struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(decoded[0], &header) != nil || json.Unmarshal(decoded[1], &claims) != nil {
		return "", false
	}
	return claims.Issuer, true
}

// errInvalidated is kube's answer for a token whose bound Secret or Pod
// is gone.
var errInvalidated = errors.New("service account token has been invalidated")

// checkObjects makes sure that the account, and the Secret or Pod the
// token is bound to, exist with the uids the token names, and were not deleted
// (deletionTimestamp) longer than the leeway ago, in kube's order.
func (a *Authenticator) checkObjects(ctx context.Context, k *kubeClaims, now time.Time) error {
	deletedBefore := now.Add(-leeway)
	sa, err := a.cfg.Getter.GetServiceAccount(ctx, k.Namespace, k.ServiceAccount.Name)
	if err != nil {
		return err
	}
	if sa.DeletionTimestamp != nil && sa.DeletionTimestamp.Time.Before(deletedBefore) {
		return fmt.Errorf("service account %s/%s has been deleted", k.Namespace, sa.Name)
	}
	if string(sa.UID) != k.ServiceAccount.UID {
		return fmt.Errorf("service account UID (%s) does not match claim (%s)", sa.UID, k.ServiceAccount.UID)
	}
	if k.Secret != nil {
		secret, err := a.cfg.Getter.GetSecret(ctx, k.Namespace, k.Secret.Name)
		if err != nil || (secret.DeletionTimestamp != nil && secret.DeletionTimestamp.Time.Before(deletedBefore)) {
			return errInvalidated
		}
		if string(secret.UID) != k.Secret.UID {
			return fmt.Errorf("secret UID (%s) does not match service account secret ref claim (%s)", secret.UID, k.Secret.UID)
		}
	}
	if k.Pod != nil {
		pod, err := a.cfg.Getter.GetPod(ctx, k.Namespace, k.Pod.Name)
		if err != nil {
			return errInvalidated
		}
		if string(pod.UID) != k.Pod.UID {
			return fmt.Errorf("pod UID (%s) does not match service account pod ref claim (%s)", pod.UID, k.Pod.UID)
		}
		if pod.DeletionTimestamp != nil && pod.DeletionTimestamp.Time.Before(deletedBefore) {
			return errInvalidated
		}
	}
	return nil
}
