package storage

import (
	"errors"
	"fmt"
)

// ErrorCode classifies a storage error.
type ErrorCode int

const (
	ErrCodeNotFound ErrorCode = iota + 1
	ErrCodeAlreadyExists
	// ErrCodeConflict: a precondition (uid or resourceVersion) did not hold.
	ErrCodeConflict
	// ErrCodeExpired: the requested revision has been compacted away.
	ErrCodeExpired
	// ErrCodeTooLargeResourceVersion: the revision is newer than the store's.
	ErrCodeTooLargeResourceVersion
	// ErrCodeInvalidContinue: a continue token that cannot be decoded.
	ErrCodeInvalidContinue
)

// Error is the error every backend returns for the conditions of the
// Interface contract.
type Error struct {
	Code ErrorCode
	Key  string
	// Revision is the revision involved, where there is one (the current
	// revision for a too-large resourceVersion, the compacted one for Expired).
	Revision int64
	// Requested is the revision asked for, for a too-large resourceVersion.
	Requested int64
	// Continue, for an expired continue token, is a token that goes on
	// from the same key at the latest revision: the rest of the list, no
	// longer consistent with its first pages.
	Continue string
	Msg      string
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	switch e.Code {
	case ErrCodeNotFound:
		return fmt.Sprintf("key not found: %s", e.Key)
	case ErrCodeAlreadyExists:
		return fmt.Sprintf("key exists: %s", e.Key)
	case ErrCodeConflict:
		return fmt.Sprintf("precondition failed for %s", e.Key)
	case ErrCodeExpired:
		return fmt.Sprintf("required revision has been compacted: %d", e.Revision)
	case ErrCodeTooLargeResourceVersion:
		return fmt.Sprintf("Too large resource version: %d, current: %d", e.Requested, e.Revision)
	case ErrCodeInvalidContinue:
		return "invalid continue token"
	}
	return "storage error"
}

func hasCode(err error, code ErrorCode) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

func IsNotFound(err error) bool      { return hasCode(err, ErrCodeNotFound) }
func IsAlreadyExists(err error) bool { return hasCode(err, ErrCodeAlreadyExists) }
func IsConflict(err error) bool      { return hasCode(err, ErrCodeConflict) }
func IsExpired(err error) bool       { return hasCode(err, ErrCodeExpired) }
func IsTooLargeResourceVersion(err error) bool {
	return hasCode(err, ErrCodeTooLargeResourceVersion)
}
func IsInvalidContinue(err error) bool { return hasCode(err, ErrCodeInvalidContinue) }

// NewConflict reports a failed precondition on key.
func NewConflict(key, msg string) error {
	return &Error{Code: ErrCodeConflict, Key: key, Msg: msg}
}
