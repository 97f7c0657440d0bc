// Package admissionregistration registers admissionregistration.k8s.io:
// the webhook configurations (v1) and the validating admission policies
// and their bindings (v1beta1), with kube's defaults and validation.
package admissionregistration
