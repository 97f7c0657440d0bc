package generic

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/cronplane/cronplane/pkg/storage"
)

// expectBadRequest fails unless err is a 400 whose message contains msg.
func expectBadRequest(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("got error %v, want a 400 Bad Request", err)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("got message %q, want it to contain %q", err.Error(), msg)
	}
}

// continueToken is a paged list's token that resumes at key, as the
// storage hands it out.
func continueToken(t *testing.T, key string) string {
	t.Helper()
	token, err := storage.EncodeContinue(key, "/registry/cronjobs/", 12)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

func TestParseResourceVersion(t *testing.T) {
	for _, tc := range []struct {
		rv   string
		want int64
		bad  bool
	}{
		{rv: "", want: 0},
		{rv: "0", want: 0},
		{rv: "1", want: 1},
		{rv: "9223372036854775807", want: 9223372036854775807},
		{rv: "abc", bad: true},
		{rv: "-1", bad: true},
		{rv: "1.5", bad: true},
		// Unsigned, as kube parses it.
		{rv: "+5", bad: true},
		{rv: "007", want: 7},
		{rv: "9223372036854775808", bad: true}, // overflows int64
	} {
		t.Run(strconv.Quote(tc.rv), func(t *testing.T) {
			got, err := parseResourceVersion(tc.rv)
			if tc.bad {
				expectBadRequest(t, err, `invalid resource version "`+tc.rv+`"`)
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// The get table of the API conventions: unset is Most Recent, "0" Any,
// another value Not older than.
func TestGetOptions(t *testing.T) {
	for _, tc := range []struct {
		name, rv string
		want     storage.GetOptions
		bad      bool
	}{
		{name: "unset reads the most recent state", rv: "", want: storage.GetOptions{Mode: storage.ReadMostRecent}},
		{name: "0 reads any state", rv: "0", want: storage.GetOptions{Mode: storage.ReadAny}},
		{name: "a version reads a state not older than it", rv: "42", want: storage.GetOptions{Mode: storage.ReadNotOlderThan, ResourceVersion: 42}},
		{name: "a non-number is a bad request", rv: "abc", bad: true},
		{name: "a negative version is a bad request", rv: "-1", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := getOptions(tc.rv)
			if tc.bad {
				expectBadRequest(t, err, `invalid resource version "`+tc.rv+`"`)
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The list table of the API conventions, cell by cell: resourceVersionMatch
// (rows) by paging and resourceVersion (columns), then the 400s.
func TestListOptions(t *testing.T) {
	token := continueToken(t, "/registry/cronjobs/default/b")
	// Every case passes this predicate: it must reach the read unchanged.
	pred := storage.SelectionPredicate{Label: labels.SelectorFromSet(labels.Set{"app": "web"})}
	read := func(mode storage.ReadMode, rv, limit int64, cont string) storage.ListOptions {
		return storage.ListOptions{Mode: mode, ResourceVersion: rv, Limit: limit, Continue: cont, Predicate: pred}
	}
	for _, tc := range []struct {
		name    string
		opts    metav1.ListOptions
		want    storage.ListOptions
		wantErr string // a 400 whose message contains this
	}{
		// resourceVersionMatch unset, no limit.
		{name: "unset reads the most recent state",
			opts: metav1.ListOptions{},
			want: read(storage.ReadMostRecent, 0, 0, "")},
		{name: "0 reads any state",
			opts: metav1.ListOptions{ResourceVersion: "0"},
			want: read(storage.ReadAny, 0, 0, "")},
		{name: "a version reads a state not older than it",
			opts: metav1.ListOptions{ResourceVersion: "42"},
			want: read(storage.ReadNotOlderThan, 42, 0, "")},

		// resourceVersionMatch unset, limit without continue.
		{name: "limit with unset reads the most recent state",
			opts: metav1.ListOptions{Limit: 5},
			want: read(storage.ReadMostRecent, 0, 5, "")},
		{name: "limit with 0 reads any state",
			opts: metav1.ListOptions{ResourceVersion: "0", Limit: 5},
			want: read(storage.ReadAny, 0, 5, "")},
		{name: "limit with a version reads exactly that version",
			opts: metav1.ListOptions{ResourceVersion: "42", Limit: 5},
			want: read(storage.ReadExact, 42, 5, "")},
		{name: "a negative limit is no limit, so a version is not older than",
			opts: metav1.ListOptions{ResourceVersion: "42", Limit: -1},
			want: read(storage.ReadNotOlderThan, 42, 0, "")},

		// resourceVersionMatch unset, limit and continue: the token decides
		// the revision, so only the token has to reach the read.
		{name: "continue with unset resumes at the token",
			opts: metav1.ListOptions{Limit: 5, Continue: token},
			want: read(storage.ReadMostRecent, 0, 5, token)},
		{name: "continue with 0 is treated as continue alone",
			opts: metav1.ListOptions{ResourceVersion: "0", Limit: 5, Continue: token},
			want: read(storage.ReadAny, 0, 5, token)},
		{name: "continue with a version is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "42", Limit: 5, Continue: token},
			wantErr: "specifying resource version is not allowed when using continue"},

		// resourceVersionMatch=Exact.
		{name: "Exact without a version is a bad request",
			opts:    metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		// kube words this message `resourceVersionMatch "exact" ...`; the
		// case of the match is left open here.
		{name: "Exact with 0 is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: `is forbidden for resourceVersion "0"`},
		{name: "Exact with a version reads exactly that version",
			opts: metav1.ListOptions{ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			want: read(storage.ReadExact, 42, 0, "")},
		{name: "Exact with limit without a version is a bad request",
			opts:    metav1.ListOptions{Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "Exact with limit and 0 is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "0", Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: `is forbidden for resourceVersion "0"`},
		{name: "Exact with limit and a version reads exactly that version",
			opts: metav1.ListOptions{ResourceVersion: "42", Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			want: read(storage.ReadExact, 42, 5, "")},
		{name: "Exact with continue is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "42", Limit: 5, Continue: token, ResourceVersionMatch: metav1.ResourceVersionMatchExact},
			wantErr: "resourceVersionMatch is forbidden when continue is provided"},

		// resourceVersionMatch=NotOlderThan.
		{name: "NotOlderThan without a version is a bad request",
			opts:    metav1.ListOptions{ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			wantErr: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "NotOlderThan with 0 reads any state",
			opts: metav1.ListOptions{ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: read(storage.ReadAny, 0, 0, "")},
		{name: "NotOlderThan with a version reads a state not older than it",
			opts: metav1.ListOptions{ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: read(storage.ReadNotOlderThan, 42, 0, "")},
		{name: "NotOlderThan with limit without a version is a bad request",
			opts:    metav1.ListOptions{Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			wantErr: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "NotOlderThan with limit and 0 reads any state",
			opts: metav1.ListOptions{ResourceVersion: "0", Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: read(storage.ReadAny, 0, 5, "")},
		// Unlike an unset match, NotOlderThan with limit does not become Exact.
		{name: "NotOlderThan with limit and a version reads a state not older than it",
			opts: metav1.ListOptions{ResourceVersion: "42", Limit: 5, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: read(storage.ReadNotOlderThan, 42, 5, "")},
		{name: "NotOlderThan with continue is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "42", Limit: 5, Continue: token, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			wantErr: "resourceVersionMatch is forbidden when continue is provided"},

		// Malformed input.
		{name: "an unsupported match is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "42", ResourceVersionMatch: "Newest"},
			wantErr: `resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan"`},
		{name: "a non-number version is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "abc"},
			wantErr: `invalid resource version "abc"`},
		{name: "a negative version is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "-1", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			wantErr: `invalid resource version "-1"`},
		{name: "a continue token that is not base64 is a bad request",
			opts:    metav1.ListOptions{Limit: 5, Continue: "not a token!"},
			wantErr: "invalid continue token: continue key is not valid"},
		{name: "a continue token reaching above the prefix is a bad request",
			opts:    metav1.ListOptions{Limit: 5, Continue: continueToken(t, "/registry/cronjobs/../secrets/x")},
			wantErr: "invalid continue token: continue key is not valid: ../secrets/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := listOptions(tc.opts, pred)
			if tc.wantErr != "" {
				expectBadRequest(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The watch table of the API conventions, and the streaming list of
// sendInitialEvents.
func TestWatchOptions(t *testing.T) {
	pred := storage.SelectionPredicate{Label: labels.SelectorFromSet(labels.Set{"app": "web"})}
	yes, no := true, false
	watch := func(mode storage.ReadMode, rv int64) storage.WatchOptions {
		return storage.WatchOptions{Mode: mode, ResourceVersion: rv, Recursive: true, Predicate: pred}
	}
	with := func(w storage.WatchOptions, edit func(*storage.WatchOptions)) storage.WatchOptions {
		edit(&w)
		return w
	}
	for _, tc := range []struct {
		name    string
		opts    metav1.ListOptions
		want    storage.WatchOptions
		wantErr string // a 400 whose message contains this
	}{
		{name: "unset gets the most recent state and starts there",
			opts: metav1.ListOptions{},
			want: watch(storage.ReadMostRecent, 0)},
		{name: "0 gets any state and starts there",
			opts: metav1.ListOptions{ResourceVersion: "0"},
			want: watch(storage.ReadAny, 0)},
		// A watch from a version starts right after it: no initial state.
		{name: "a version starts at exactly that version",
			opts: metav1.ListOptions{ResourceVersion: "42"},
			want: watch(storage.ReadAny, 42)},

		{name: "sendInitialEvents with unset streams a consistent state",
			opts: metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadMostRecent, 0), func(w *storage.WatchOptions) { w.SendInitialEvents = true })},
		{name: "sendInitialEvents with 0 streams any state",
			opts: metav1.ListOptions{SendInitialEvents: &yes, ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadAny, 0), func(w *storage.WatchOptions) { w.SendInitialEvents = true })},
		{name: "sendInitialEvents with a version streams a state not older than it",
			opts: metav1.ListOptions{SendInitialEvents: &yes, ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadNotOlderThan, 42), func(w *storage.WatchOptions) { w.SendInitialEvents = true })},

		{name: "sendInitialEvents=false with unset starts at the most recent state without it",
			opts: metav1.ListOptions{SendInitialEvents: &no, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadMostRecent, 0), func(w *storage.WatchOptions) { w.SkipInitialState = true })},
		{name: "sendInitialEvents=false with 0 starts at any state without it",
			opts: metav1.ListOptions{SendInitialEvents: &no, ResourceVersion: "0", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadAny, 0), func(w *storage.WatchOptions) { w.SkipInitialState = true })},
		{name: "sendInitialEvents=false with a version starts at that version",
			opts: metav1.ListOptions{SendInitialEvents: &no, ResourceVersion: "42", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
			want: with(watch(storage.ReadAny, 42), func(w *storage.WatchOptions) { w.SkipInitialState = true })},

		{name: "allowWatchBookmarks asks for progress notifications",
			opts: metav1.ListOptions{ResourceVersion: "42", AllowWatchBookmarks: true},
			want: with(watch(storage.ReadAny, 42), func(w *storage.WatchOptions) { w.ProgressNotify = true })},

		{name: "a non-number version is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "abc"},
			wantErr: `invalid resource version "abc"`},
		{name: "a negative version is a bad request",
			opts:    metav1.ListOptions{ResourceVersion: "-1"},
			wantErr: `invalid resource version "-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := watchOptions(tc.opts, pred)
			if tc.wantErr != "" {
				expectBadRequest(t, err, tc.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
