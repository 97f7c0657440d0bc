// Package podspec owns kube v1.29's rules for the core/v1 PodSpec wherever
// it appears: in a Pod, or as the template of a Job, a CronJob's job
// template or a PodTemplate. It defaults a spec as kube's v1 defaulting
// (and its round trip through the internal version) does, drops the
// fields of the feature gates v1.29 has off, validates a spec and a
// template with kube's field paths, error types and messages, and gives
// the warnings kube sends with a write that succeeds. The registries of
// the kinds that carry a spec call it from their strategies; it knows no
// storage and no HTTP.
package podspec
