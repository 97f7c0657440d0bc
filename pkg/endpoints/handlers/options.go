package handlers

import (
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Query parameters are read with meta/v1's conversions, so that they
// mean what they mean to kube: a boolean is false only when absent, "0" or
// "false" in any case (watch=yes is a watch); a malformed number is a 400
// carrying strconv's complaint. The functions here are pure: a query in,
// options or an API error out.

// parameterCodec converts a query into meta/v1's option types.
var parameterCodec = func() runtime.ParameterCodec {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	return runtime.NewParameterCodec(scheme)
}()

func decodeParams(q url.Values, into runtime.Object) error {
	if err := parameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// invalidOptions is kube's 422 for options that fail validation, such as
// `CreateOptions.meta.k8s.io "" is invalid: ...`.
func invalidOptions(kind string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "", errs)
}

// optionErrors answers option errors: those SPEC.md gives a code of its own
// (dryRun and fieldValidation values, apply without fieldManager) are 400s
// with the field error's text, the rest kube's 422.
func optionErrors(kind string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs {
		switch {
		case e.Field == "dryRun":
			values, _ := e.BadValue.([]string)
			for _, v := range values {
				if v != metav1.DryRunAll {
					return apierrors.NewBadRequest(fmt.Sprintf("Invalid dryRun value: %q, valid values are: %s", v, metav1.DryRunAll))
				}
			}
		case e.Field == "fieldValidation":
			return apierrors.NewBadRequest(fmt.Sprintf("fieldValidation must be one of %q, %q, or %q, got %q", metav1.FieldValidationIgnore, metav1.FieldValidationWarn, metav1.FieldValidationStrict, e.BadValue))
		case e.Field == "fieldManager" && e.Type == field.ErrorTypeRequired:
			return apierrors.NewBadRequest("PATCH requests with apply content type must specify fieldManager")
		}
	}
	return invalidOptions(kind, errs)
}

// createOptions reads and checks the options of a POST.
func createOptions(q url.Values) (*metav1.CreateOptions, error) {
	opts := &metav1.CreateOptions{}
	if err := decodeParams(q, opts); err != nil {
		return nil, err
	}
	return opts, optionErrors("CreateOptions", metav1validation.ValidateCreateOptions(opts))
}

// updateOptions reads and checks the options of a PUT.
func updateOptions(q url.Values) (*metav1.UpdateOptions, error) {
	opts := &metav1.UpdateOptions{}
	if err := decodeParams(q, opts); err != nil {
		return nil, err
	}
	return opts, optionErrors("UpdateOptions", metav1validation.ValidateUpdateOptions(opts))
}

// patchOptions reads and checks the options of a PATCH of type pt.
func patchOptions(q url.Values, pt types.PatchType) (*metav1.PatchOptions, error) {
	opts := &metav1.PatchOptions{}
	if err := decodeParams(q, opts); err != nil {
		return nil, err
	}
	return opts, optionErrors("PatchOptions", metav1validation.ValidatePatchOptions(opts, pt))
}

// listOptions reads the options of a list or watch. A request routed as a
// watch (the /watch/ prefix, a name with watch=1) is one whatever the
// query says. With the WatchList feature, a watch from no particular
// resourceVersion streams its initial state (sendInitialEvents), as kube
// defaults it.
func listOptions(q url.Values, watch, watchList bool) (metav1.ListOptions, error) {
	var opts metav1.ListOptions
	if err := decodeParams(q, &opts); err != nil {
		return opts, err
	}
	if _, ok := q["sendInitialEvents"]; !ok {
		opts.SendInitialEvents = nil
	}
	opts.Watch = opts.Watch || watch
	if watchList && opts.Watch && opts.SendInitialEvents == nil && opts.ResourceVersionMatch == "" &&
		(opts.ResourceVersion == "" || opts.ResourceVersion == "0") {
		initial := true
		opts.SendInitialEvents = &initial
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
	}
	return opts, validateListOptions(opts, watchList)
}

// validateListOptions checks list and watch options as kube does. The
// resourceVersionMatch misuses SPEC.md names are 400s; the rest kube's 422.
func validateListOptions(opts metav1.ListOptions, watchList bool) error {
	match := opts.ResourceVersionMatch
	path := field.NewPath("resourceVersionMatch")
	var bad, invalid field.ErrorList
	if !opts.Watch {
		if match != "" {
			if opts.ResourceVersion == "" {
				bad = append(bad, field.Forbidden(path, "resourceVersionMatch is forbidden unless resourceVersion is provided"))
			}
			if opts.Continue != "" {
				bad = append(bad, field.Forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
			}
			if match != metav1.ResourceVersionMatchExact && match != metav1.ResourceVersionMatchNotOlderThan {
				bad = append(bad, field.NotSupported(path, match, []string{string(metav1.ResourceVersionMatchExact), string(metav1.ResourceVersionMatchNotOlderThan), ""}))
			}
			if match == metav1.ResourceVersionMatchExact && opts.ResourceVersion == "0" {
				bad = append(bad, field.Forbidden(path, `resourceVersionMatch "Exact" is forbidden for resourceVersion "0"`))
			}
		}
		if opts.SendInitialEvents != nil {
			invalid = append(invalid, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for list"))
		}
	} else {
		if opts.SendInitialEvents != nil {
			if match != metav1.ResourceVersionMatchNotOlderThan {
				bad = append(bad, field.Forbidden(path, fmt.Sprintf("sendInitialEvents requires setting resourceVersionMatch to %s", metav1.ResourceVersionMatchNotOlderThan)))
			}
			if !watchList {
				invalid = append(invalid, field.Forbidden(field.NewPath("sendInitialEvents"), "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"))
			}
		}
		if match != "" {
			if opts.SendInitialEvents == nil {
				bad = append(bad, field.Forbidden(path, "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"))
			}
			if match != metav1.ResourceVersionMatchNotOlderThan {
				bad = append(bad, field.NotSupported(path, match, []string{string(metav1.ResourceVersionMatchNotOlderThan)}))
			}
			// A watch does not page: kube rejects its continue as a 422.
			if opts.Continue != "" {
				invalid = append(invalid, field.Forbidden(path, "resourceVersionMatch is forbidden when continue is provided"))
			}
		}
	}
	if len(invalid) > 0 {
		return invalidOptions("ListOptions", append(bad, invalid...))
	}
	if len(bad) > 0 {
		msg := bad[0].Error()
		if bad[0].Type == field.ErrorTypeForbidden {
			msg = bad[0].Detail
		}
		return apierrors.NewBadRequest(msg)
	}
	return nil
}
