package generic

import (
	"fmt"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cronplane/cronplane/pkg/storage"
)

// The functions here map the resourceVersion options of the API onto
// storage reads, cell by cell of the tables in the API conventions. They
// are pure: options in, a read or an API error out.

// parseResourceVersion reads a client's resourceVersion; "" and "0" are 0.
func parseResourceVersion(rv string) (int64, error) {
	if rv == "" || rv == "0" {
		return 0, nil
	}
	// Unsigned, as kube parses it: no sign, leading zeros allowed.
	v, err := strconv.ParseUint(rv, 10, 63)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return int64(v), nil
}

// getOptions maps a get's resourceVersion onto a read: unset is the most
// recent state, "0" any state, another value a state not older than it.
func getOptions(rv string) (storage.GetOptions, error) {
	n, err := parseResourceVersion(rv)
	switch {
	case err != nil:
		return storage.GetOptions{}, err
	case rv == "":
		return storage.GetOptions{Mode: storage.ReadMostRecent}, nil
	case n == 0:
		return storage.GetOptions{Mode: storage.ReadAny}, nil
	}
	return storage.GetOptions{Mode: storage.ReadNotOlderThan, ResourceVersion: n}, nil
}

// listOptions maps a list's resourceVersion, resourceVersionMatch, limit
// and continue onto a read.
func listOptions(opts metav1.ListOptions, pred storage.SelectionPredicate) (storage.ListOptions, error) {
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return storage.ListOptions{}, err
	}
	limit := opts.Limit
	if limit < 0 {
		limit = 0
	}
	out := storage.ListOptions{Limit: limit, Continue: opts.Continue, Predicate: pred, ResourceVersion: rv}
	if opts.Continue != "" {
		if _, _, err := storage.DecodeContinue(opts.Continue, ""); err != nil {
			return out, apierrors.NewBadRequest("invalid continue token: " + err.Error())
		}
	}
	unset, zero := opts.ResourceVersion == "", opts.ResourceVersion == "0"
	switch opts.ResourceVersionMatch {
	case "":
		switch {
		case opts.Continue != "" && !unset && !zero:
			return out, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		case unset:
			out.Mode = storage.ReadMostRecent
		case zero:
			out.Mode = storage.ReadAny
		case limit > 0:
			out.Mode = storage.ReadExact
		default:
			out.Mode = storage.ReadNotOlderThan
		}
	case metav1.ResourceVersionMatchExact:
		switch {
		case unset:
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		case zero:
			return out, apierrors.NewBadRequest(`resourceVersionMatch "exact" is forbidden for resourceVersion "0"`)
		case opts.Continue != "":
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		}
		out.Mode = storage.ReadExact
	case metav1.ResourceVersionMatchNotOlderThan:
		switch {
		case unset:
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		case opts.Continue != "":
			return out, apierrors.NewBadRequest("resourceVersionMatch is forbidden when continue is provided")
		case zero:
			out.Mode = storage.ReadAny
		default:
			out.Mode = storage.ReadNotOlderThan
		}
	default:
		return out, apierrors.NewBadRequest(fmt.Sprintf("resourceVersionMatch: Unsupported value: %q: supported values: %q, %q", opts.ResourceVersionMatch, metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan))
	}
	return out, nil
}

// watchOptions maps a watch's resourceVersion and sendInitialEvents onto a
// storage watch.
func watchOptions(opts metav1.ListOptions, pred storage.SelectionPredicate) (storage.WatchOptions, error) {
	rv, err := parseResourceVersion(opts.ResourceVersion)
	if err != nil {
		return storage.WatchOptions{}, err
	}
	out := storage.WatchOptions{ResourceVersion: rv, Mode: storage.ReadAny, Recursive: true, Predicate: pred, ProgressNotify: opts.AllowWatchBookmarks}
	if opts.ResourceVersion == "" {
		out.Mode = storage.ReadMostRecent
	}
	if sie := opts.SendInitialEvents; sie != nil {
		out.SendInitialEvents = *sie
		out.SkipInitialState = !*sie
		if *sie && rv > 0 {
			out.Mode = storage.ReadNotOlderThan
		}
	}
	return out, nil
}
