// Package validate checks the Kubernetes manifests in ../kubernetes by
// decoding them strictly into the official API types (k8s.io/api): an
// unknown or misspelt field, a wrong type or a missing document fails the
// test. It is a module of its own so that the library's go.mod keeps only
// golang.org/x dependencies; CI runs it from .ci/run.
package validate
