// Package validate checks the Kubernetes manifests in ../kubernetes by
// running them, as far as can be done without a cluster:
//
//   - Render builds each kustomization (the sharded StatefulSet in
//     ../kubernetes, the ReadWriteMany Deployment in ../kubernetes/rwx) with
//     the kustomize API, on an in-memory copy to which the files the
//     operator creates (the token, the rwx host key) are added, and decodes
//     every object strictly into its API type.
//   - ParseDockerfile reads the image's ENTRYPOINT, CMD, WORKDIR, ENV and
//     COPY from ../../Dockerfile; ContainerArgv and ContainerEnv apply
//     Kubernetes' rules (command replaces ENTRYPOINT, args replace CMD,
//     $(VAR) expansion, Secret references) to get the container's argv and
//     environment.
//   - RunContainer starts that argv in a bwrap sandbox standing in for the
//     container (uid 0 in a user namespace, PID 1, the pod's capabilities,
//     each volume mount backed by a directory, the Secret's keys as files):
//     the real docker-entrypoint.sh runs, and execs a stub in place of the
//     daemon (this package's test binary, StubMain), which records its
//     argv, environment, directory and PID, and can start the real daemon
//     with them and probe it.
//   - CheckRun, CheckServe, CheckPod and CheckEgress say what is wrong:
//     a container that never reaches the daemon (the crash loop of the first
//     manifests), a daemon that is not PID 1, a token on the command line,
//     a host key that does not persist or that tenants can read, a pod
//     without the protections it needs, egress to cloud metadata or the
//     API server.
//
// It is a module of its own so that the library's go.mod keeps only
// golang.org/x dependencies; CI runs it from .ci/run. It needs bwrap (and
// Go, to build the daemon for the run of the real one).
package validate
