// Package kubernetes holds the Kubernetes manifests that run mqblast's shards on several
// nodes (job.yaml, configmap.yaml, README.md); its test checks them offline against the
// batch/v1 and core/v1 types. It has no code of its own.
package kubernetes
