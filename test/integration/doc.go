// Package integration holds the tests that run both binaries' code in one
// process: a real apiserver with an embedded etcd (apiservertest) and the
// controller-manager against it over HTTP, as a user runs them.
package integration
