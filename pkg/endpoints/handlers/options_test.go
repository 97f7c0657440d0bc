package handlers

import (
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// apiError is the API error an option function must answer.
type apiError struct {
	code int32
	msg  string // contained in the message
	// kind is the options kind a 422 names, as in
	// `CreateOptions.meta.k8s.io "" is invalid: ...`.
	kind string
}

func query(t *testing.T, raw string) url.Values {
	t.Helper()
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func expectAPIError(t *testing.T, err error, want apiError) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got error %v, want an API error with code %d", err, want.code)
	}
	s := status.Status()
	if s.Code != want.code {
		t.Fatalf("got code %d (%s: %s), want %d", s.Code, s.Reason, s.Message, want.code)
	}
	switch want.code {
	case http.StatusBadRequest:
		if !apierrors.IsBadRequest(err) {
			t.Errorf("got reason %q, want BadRequest", s.Reason)
		}
	case http.StatusUnprocessableEntity:
		if !apierrors.IsInvalid(err) {
			t.Errorf("got reason %q, want Invalid", s.Reason)
		}
		if s.Details == nil || s.Details.Group != metav1.GroupName || s.Details.Kind != want.kind {
			t.Errorf("got details %+v, want group %q kind %q", s.Details, metav1.GroupName, want.kind)
		}
	}
	if !strings.Contains(s.Message, want.msg) {
		t.Errorf("got message %q, want it to contain %q", s.Message, want.msg)
	}
}

// POST and PUT take the same options; each case runs through both.
func TestCreateAndUpdateOptions(t *testing.T) {
	tooLong := strings.Repeat("m", 129)
	for _, tc := range []struct {
		name                          string
		query                         string
		dryRun                        []string
		fieldManager, fieldValidation string
		err                           *apiError // kind is set per function
	}{
		{name: "no options", query: ""},
		{name: "dryRun=All", query: "dryRun=All", dryRun: []string{"All"}},
		{name: "fieldManager", query: "fieldManager=my-controller", fieldManager: "my-controller"},
		{name: "fieldValidation=Strict", query: "fieldValidation=Strict", fieldValidation: "Strict"},
		{name: "fieldValidation=Warn", query: "fieldValidation=Warn", fieldValidation: "Warn"},
		{name: "fieldValidation=Ignore", query: "fieldValidation=Ignore", fieldValidation: "Ignore"},
		{name: "all options together", query: "dryRun=All&fieldManager=m&fieldValidation=Strict&pretty=true",
			dryRun: []string{"All"}, fieldManager: "m", fieldValidation: "Strict"},

		// SPEC.md: bad dryRun and fieldValidation values are 400s.
		{name: "unknown dryRun value is a bad request", query: "dryRun=Bogus",
			err: &apiError{code: 400, msg: `Invalid dryRun value: "Bogus", valid values are: All`}},
		{name: "dryRun values are case sensitive", query: "dryRun=all",
			err: &apiError{code: 400, msg: `Invalid dryRun value: "all"`}},
		{name: "the bad one of several dryRun values is named", query: "dryRun=All&dryRun=Bogus",
			err: &apiError{code: 400, msg: `Invalid dryRun value: "Bogus"`}},
		{name: "unknown fieldValidation value is a bad request", query: "fieldValidation=strict",
			err: &apiError{code: 400, msg: `fieldValidation must be one of "Ignore", "Warn", or "Strict", got "strict"`}},
		{name: "a SPEC.md 400 wins over a kube 422", query: "fieldManager=" + tooLong + "&dryRun=Bogus",
			err: &apiError{code: 400, msg: `Invalid dryRun value: "Bogus"`}},

		// kube: a bad fieldManager is a 422.
		{name: "fieldManager over 128 bytes is invalid", query: "fieldManager=" + tooLong,
			err: &apiError{code: 422, msg: `"" is invalid: fieldManager: Too long: must have at most 128 bytes`}},
		{name: "fieldManager with a control character is invalid", query: "fieldManager=a%01",
			err: &apiError{code: 422, msg: "fieldManager: Invalid value: \"a\\x01\": invalid character U+0001 (at position 1)"}},

		// decodeParams: kube's query conversion of a repeated string
		// keeps the first value.
		{name: "a repeated fieldManager keeps the first", query: "fieldManager=a&fieldManager=b", fieldManager: "a"},
	} {
		check := func(t *testing.T, kind string, dryRun []string, fieldManager, fieldValidation string, err error) {
			t.Helper()
			if tc.err != nil {
				want := *tc.err
				want.kind = kind
				expectAPIError(t, err, want)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(dryRun, tc.dryRun) || fieldManager != tc.fieldManager || fieldValidation != tc.fieldValidation {
				t.Errorf("got dryRun=%q fieldManager=%q fieldValidation=%q, want %q %q %q",
					dryRun, fieldManager, fieldValidation, tc.dryRun, tc.fieldManager, tc.fieldValidation)
			}
		}
		t.Run("create/"+tc.name, func(t *testing.T) {
			opts, err := createOptions(query(t, tc.query))
			if opts == nil {
				opts = &metav1.CreateOptions{}
			}
			check(t, "CreateOptions", opts.DryRun, opts.FieldManager, opts.FieldValidation, err)
		})
		t.Run("update/"+tc.name, func(t *testing.T) {
			opts, err := updateOptions(query(t, tc.query))
			if opts == nil {
				opts = &metav1.UpdateOptions{}
			}
			check(t, "UpdateOptions", opts.DryRun, opts.FieldManager, opts.FieldValidation, err)
		})
	}
}

func TestPatchOptions(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name  string
		pt    types.PatchType
		query string
		want  metav1.PatchOptions
		err   *apiError
	}{
		{name: "merge patch with every option but force", pt: types.MergePatchType,
			query: "dryRun=All&fieldManager=m&fieldValidation=Ignore",
			want:  metav1.PatchOptions{DryRun: []string{"All"}, FieldManager: "m", FieldValidation: "Ignore"}},
		{name: "a non-apply patch needs no fieldManager", pt: types.JSONPatchType,
			query: "", want: metav1.PatchOptions{}},
		{name: "apply with fieldManager", pt: types.ApplyPatchType,
			query: "fieldManager=m", want: metav1.PatchOptions{FieldManager: "m"}},
		{name: "apply with force=true", pt: types.ApplyPatchType,
			query: "fieldManager=m&force=true", want: metav1.PatchOptions{FieldManager: "m", Force: &yes}},
		{name: "apply with force=false", pt: types.ApplyPatchType,
			query: "fieldManager=m&force=false", want: metav1.PatchOptions{FieldManager: "m", Force: &no}},
		// kube's boolean: any value but "0" and "false" is true.
		{name: "apply with a bare force", pt: types.ApplyPatchType,
			query: "fieldManager=m&force", want: metav1.PatchOptions{FieldManager: "m", Force: &yes}},

		// SPEC.md: apply requires fieldManager, a 400.
		{name: "apply without fieldManager is a bad request", pt: types.ApplyPatchType,
			query: "force=true",
			err:   &apiError{code: 400, msg: "PATCH requests with apply content type must specify fieldManager"}},
		{name: "apply with a bad dryRun is a bad request", pt: types.ApplyPatchType,
			query: "fieldManager=m&dryRun=Bogus",
			err:   &apiError{code: 400, msg: `Invalid dryRun value: "Bogus"`}},
		{name: "a bad fieldValidation is a bad request", pt: types.StrategicMergePatchType,
			query: "fieldValidation=Loud",
			err:   &apiError{code: 400, msg: `got "Loud"`}},

		// kube: force on a non-apply patch is a 422.
		{name: "force on a merge patch is invalid", pt: types.MergePatchType,
			query: "force=true",
			err:   &apiError{code: 422, kind: "PatchOptions", msg: `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`}},
		{name: "force=false on a JSON patch is invalid too", pt: types.JSONPatchType,
			query: "force=false",
			err:   &apiError{code: 422, kind: "PatchOptions", msg: "force: Forbidden: may not be specified for non-apply patch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := patchOptions(query(t, tc.query), tc.pt)
			if tc.err != nil {
				expectAPIError(t, err, *tc.err)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %v\nwant %v", got, &tc.want)
			}
		})
	}
}

func TestListOptions(t *testing.T) {
	yes, no := true, false
	thirty := int64(30)
	for _, tc := range []struct {
		name      string
		query     string
		watch     bool // routed as a watch
		watchList bool // the WatchList feature
		want      metav1.ListOptions
		err       *apiError
	}{
		{name: "a list with every paging and selection option",
			query: "labelSelector=app%3Dweb&fieldSelector=metadata.name%3Dx&limit=5&continue=tok&resourceVersion=0&timeoutSeconds=30",
			want:  metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "metadata.name=x", Limit: 5, Continue: "tok", ResourceVersion: "0", TimeoutSeconds: &thirty}},
		{name: "a list with resourceVersionMatch=Exact",
			query: "resourceVersion=42&resourceVersionMatch=Exact",
			want:  metav1.ListOptions{ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchExact}},
		{name: "a list with resourceVersionMatch=NotOlderThan and 0",
			query: "resourceVersion=0&resourceVersionMatch=NotOlderThan",
			want:  metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}},
		{name: "a list is not defaulted to a streaming list", query: "", watchList: true,
			want: metav1.ListOptions{}},

		// kube's booleans: false only when absent, "0" or "false" in any case.
		{name: "watch=1 is a watch", query: "watch=1&allowWatchBookmarks=true&resourceVersion=42",
			want: metav1.ListOptions{Watch: true, AllowWatchBookmarks: true, ResourceVersion: "42"}},
		{name: "watch=yes is a watch", query: "watch=yes",
			want: metav1.ListOptions{Watch: true}},
		{name: "a bare watch is a watch", query: "watch",
			want: metav1.ListOptions{Watch: true}},
		{name: "watch=FALSE is a list", query: "watch=FALSE",
			want: metav1.ListOptions{}},
		{name: "watch=0 is a list", query: "watch=0",
			want: metav1.ListOptions{}},
		{name: "a request routed as a watch is one whatever the query says", query: "watch=false", watch: true,
			want: metav1.ListOptions{Watch: true}},

		// WatchList: a watch from no particular version streams its
		// initial state, as kube defaults it.
		{name: "watchList defaults a watch from unset to sendInitialEvents", query: "watch=1", watchList: true,
			want: metav1.ListOptions{Watch: true, SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}},
		{name: "watchList defaults a watch from 0 to sendInitialEvents", query: "watch=1&resourceVersion=0", watchList: true,
			want: metav1.ListOptions{Watch: true, ResourceVersion: "0", SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}},
		{name: "watchList leaves a watch from a version alone", query: "watch=1&resourceVersion=42", watchList: true,
			want: metav1.ListOptions{Watch: true, ResourceVersion: "42"}},
		{name: "without watchList a watch is not defaulted", query: "watch=1",
			want: metav1.ListOptions{Watch: true}},
		{name: "watchList keeps an explicit sendInitialEvents=false", query: "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan", watchList: true,
			want: metav1.ListOptions{Watch: true, SendInitialEvents: &no, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}},
		{name: "a streaming list from a version", query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=42&allowWatchBookmarks=true", watchList: true,
			want: metav1.ListOptions{Watch: true, SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ResourceVersion: "42", AllowWatchBookmarks: true}},

		// decodeParams: a malformed number is a 400 with strconv's complaint.
		{name: "a non-number limit is a bad request", query: "limit=ten",
			err: &apiError{code: 400, msg: `strconv.ParseInt: parsing "ten": invalid syntax`}},
		{name: "a non-number timeoutSeconds is a bad request", query: "watch=1&timeoutSeconds=1m",
			err: &apiError{code: 400, msg: `strconv.ParseInt: parsing "1m": invalid syntax`}},

		// SPEC.md: misuses of resourceVersionMatch on a list are 400s.
		{name: "a list with a match without a version is a bad request", query: "resourceVersionMatch=NotOlderThan",
			err: &apiError{code: 400, msg: "resourceVersionMatch is forbidden unless resourceVersion is provided"}},
		{name: "a list with a match and continue is a bad request", query: "resourceVersion=42&resourceVersionMatch=Exact&continue=tok",
			err: &apiError{code: 400, msg: "resourceVersionMatch is forbidden when continue is provided"}},
		{name: "a list with an unsupported match is a bad request", query: "resourceVersion=42&resourceVersionMatch=Newest",
			err: &apiError{code: 400, msg: `resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`}},
		// kube words this message `resourceVersionMatch "exact" ...`; the
		// case of the match is left open here.
		{name: "a list with Exact from 0 is a bad request", query: "resourceVersion=0&resourceVersionMatch=Exact",
			err: &apiError{code: 400, msg: `is forbidden for resourceVersion "0"`}},

		// kube: sendInitialEvents on a list is a 422, and then carries
		// every error, the SPEC.md ones too.
		{name: "sendInitialEvents on a list is invalid", query: "sendInitialEvents=true", watchList: true,
			err: &apiError{code: 422, kind: "ListOptions", msg: `ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list`}},
		{name: "an invalid list names the bad request errors too", query: "sendInitialEvents=false&resourceVersionMatch=Exact",
			err: &apiError{code: 422, kind: "ListOptions", msg: "[resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided, sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list]"}},

		// Watches.
		{name: "sendInitialEvents without NotOlderThan is a bad request", query: "watch=1&sendInitialEvents=true", watchList: true,
			err: &apiError{code: 400, msg: "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"}},
		{name: "a watch with a match and no sendInitialEvents is a bad request", query: "watch=1&resourceVersion=42&resourceVersionMatch=NotOlderThan", watchList: true,
			err: &apiError{code: 400, msg: "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"}},
		// The first of several errors is the message.
		{name: "a watch with Exact is a bad request", query: "watch=1&sendInitialEvents=true&resourceVersion=42&resourceVersionMatch=Exact", watchList: true,
			err: &apiError{code: 400, msg: "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"}},
		{name: "sendInitialEvents without watchList is invalid", query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
			err: &apiError{code: 422, kind: "ListOptions", msg: "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"}},
		{name: "a streaming list with continue is invalid", query: "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=tok", watchList: true,
			err: &apiError{code: 422, kind: "ListOptions", msg: "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := listOptions(query(t, tc.query), tc.watch, tc.watchList)
			if tc.err != nil {
				expectAPIError(t, err, *tc.err)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %v\nwant %v", &got, &tc.want)
			}
		})
	}
}
