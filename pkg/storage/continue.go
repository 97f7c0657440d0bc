package storage

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// continueToken is the form of a paged list's continue token, as kube
// encodes it: where the next page starts, relative to the list's prefix,
// and the revision of the first page.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

// inconsistentRV is the revision of a token that resumes at the latest
// revision instead of the first page's.
const inconsistentRV = -1

// EncodeContinue returns the token of a paged list that resumes at key,
// under prefix, at revision rv.
func EncodeContinue(key, prefix string, rv int64) (string, error) {
	b, err := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", RV: rv, Start: strings.TrimPrefix(key, prefix)})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue returns the key, under prefix, and the revision at which
// a paged list resumes; 0 for a token that resumes at the latest revision
// (see Error.Continue). A token that cannot be read is an error for which
// IsInvalidContinue is true, saying why; a token never reaches above
// prefix.
func DecodeContinue(token, prefix string) (string, int64, error) {
	invalid := func(detail string) error {
		msg := "continue key is not valid"
		if detail != "" {
			msg += ": " + detail
		}
		return &Error{Code: ErrCodeInvalidContinue, Msg: msg}
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return "", 0, invalid(err.Error())
	}
	var t continueToken
	if err := json.Unmarshal(data, &t); err != nil {
		return "", 0, invalid(err.Error())
	}
	switch {
	case t.APIVersion != "meta.k8s.io/v1":
		return "", 0, invalid(fmt.Sprintf("server does not recognize this encoded version %s", t.APIVersion))
	case t.RV == 0:
		return "", 0, invalid("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	case t.Start == "":
		return "", 0, invalid("encoded start key empty (version meta.k8s.io/v1)")
	}
	start := strings.TrimLeft(t.Start, "/")
	for _, seg := range strings.Split(start, "/") {
		if seg == ".." || seg == "." {
			return "", 0, invalid(t.Start)
		}
	}
	rv := t.RV
	if rv < 0 {
		rv = 0
	}
	return prefix + start, rv, nil
}

// InconsistentContinue returns the token that resumes a list at key, under
// prefix, at the latest revision.
func InconsistentContinue(key, prefix string) (string, error) {
	return EncodeContinue(key, prefix, inconsistentRV)
}
