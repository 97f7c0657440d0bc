package authenticator

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cronplane/cronplane/pkg/auth/user"
)

// Request authenticates an HTTP request by credentials of one kind. ok is
// false and err nil when the request carries none of that kind; err is
// set when it carries some that are not good, which no other kind can
// make good.
type Request interface {
	AuthenticateRequest(r *http.Request) (u *user.Info, ok bool, err error)
}

// Union tries each authenticator in order; the first that authenticates
// the request decides. The failures of the others come back when none
// does.
type Union []Request

func (ua Union) AuthenticateRequest(r *http.Request) (*user.Info, bool, error) {
	var errs []error
	for _, a := range ua {
		u, ok, err := a.AuthenticateRequest(r)
		if ok {
			return u, true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

// ErrInvalidBearerToken is kube's answer for a bearer token that no
// token authenticator recognizes.
var ErrInvalidBearerToken = errors.New("invalid bearer token")

// BearerToken reads "Authorization: Bearer <token>" and asks Token. A
// token Token does not recognise is bad credentials; a request without
// a bearer token has none. The header is removed once it has served, so
// that nothing further in the server sees it.
type BearerToken struct{ Token Token }

func (b BearerToken) AuthenticateRequest(r *http.Request) (*user.Info, bool, error) {
	token, ok := bearerTokenOf(r.Header.Get("Authorization"))
	if !ok {
		return nil, false, nil
	}
	resp, ok, err := b.Token.AuthenticateToken(r.Context(), token)
	if ok {
		r.Header.Del("Authorization")
		return resp.User, true, nil
	}
	if err == nil {
		err = ErrInvalidBearerToken
	}
	return nil, false, err
}

// bearerTokenOf reads the token of an Authorization header as kube does:
// the header trimmed, the scheme "Bearer" in any case, then exactly one
// space and the token up to the next space. "Bearer  <token>" (two
// spaces) therefore carries no token, and a request with it is
// anonymous, as in kube.
func bearerTokenOf(header string) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(header), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// X509 authenticates the client certificate of a TLS connection that
// chains to Roots and is meant for client authentication: its common name
// is the user, its organizations the groups. A certificate that does not
// verify is bad credentials.
type X509 struct{ Roots *x509.CertPool }

func (a X509) AuthenticateRequest(r *http.Request) (*user.Info, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	opts := x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := certs[0].Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certDescription(certs[0]), err)
	}
	if certs[0].Subject.CommonName == "" {
		return nil, false, nil
	}
	return &user.Info{Name: certs[0].Subject.CommonName, Groups: append([]string(nil), certs[0].Subject.Organization...)}, true, nil
}

func certDescription(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%s, SKID=%X, AKID=%X", c.SerialNumber, c.SubjectKeyId, c.AuthorityKeyId)
}
