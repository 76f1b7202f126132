package kubernetes

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/mqblast/mqblast/scenario"
)

// decodeStrict reads a manifest into its Kubernetes type, refusing unknown fields (a typo
// in a field name would otherwise be dropped silently, here and by an old kubectl).
func decodeStrict(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func envOf(c *corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// TestJobManifest: job.yaml is a batch/v1 Job of N shards (Indexed, parallelism ==
// completions == JOB_COMPLETIONS), one pod per node, a privileged init container gated by
// the ConfigMap, the run's flags for --shard auto, --start-at and a JSON result on stdout.
func TestJobManifest(t *testing.T) {
	var job batchv1.Job
	decodeStrict(t, "job.yaml", &job)
	if job.APIVersion != "batch/v1" || job.Kind != "Job" {
		t.Fatalf("%s %s, want batch/v1 Job", job.APIVersion, job.Kind)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism || *s.Completions < 1 {
		t.Fatalf("completions %v, parallelism %v: want equal, at least 1", s.Completions, s.Parallelism)
	}
	n := *s.Completions
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %q, want Never (a shard rerun would not start with the others)", pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := &pod.Containers[0]
	if e := envOf(c, "JOB_COMPLETIONS"); e == nil || e.Value != strconv.Itoa(int(n)) {
		t.Errorf("JOB_COMPLETIONS %+v, want %d (the completions)", e, n)
	}
	if e := envOf(c, "START_AT"); e == nil || e.Value != "__START_AT__" {
		t.Errorf("START_AT %+v, want the placeholder __START_AT__ that README.md's apply replaces", e)
	}
	for _, want := range [][]string{{"--shard", "auto"}, {"--start-at", "$(START_AT)"}, {"--format", "json"}, {"--broker", "$(MQBLAST_BROKER)"}} {
		i := slices.Index(c.Args, want[0])
		if i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != want[1] {
			t.Errorf("args %q lack %s %s", c.Args, want[0], want[1])
		}
	}
	if len(c.Args) < 2 || c.Args[0] != "run" {
		t.Fatalf("args %q, want run SCENARIO ...", c.Args)
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if filepath.Join(m.MountPath, "scenario.json") == c.Args[1] {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the scenario %s is not under a volume mount %+v", c.Args[1], c.VolumeMounts)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].ConfigMap == nil || pod.Volumes[0].ConfigMap.Name != "mqblast" {
		t.Errorf("volumes %+v, want the ConfigMap mqblast", pod.Volumes)
	}
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[k]; !ok {
			t.Errorf("no %s request", k)
		}
		if _, ok := c.Resources.Limits[k]; !ok {
			t.Errorf("no %s limit", k)
		}
	}

	a := pod.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v, want one required pod anti-affinity term", a)
	}
	term := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != corev1.LabelHostname {
		t.Errorf("anti-affinity topologyKey %q, want %s (one pod per node)", term.TopologyKey, corev1.LabelHostname)
	}
	if term.LabelSelector == nil || len(term.LabelSelector.MatchLabels) == 0 {
		t.Fatalf("anti-affinity selector %+v", term.LabelSelector)
	}
	for k, v := range term.LabelSelector.MatchLabels {
		if s.Template.Labels[k] != v {
			t.Errorf("anti-affinity selects %s=%s, which the Job's pods do not carry (%v)", k, v, s.Template.Labels)
		}
	}

	if len(pod.InitContainers) != 1 {
		t.Fatalf("%d init containers, want 1 (tune)", len(pod.InitContainers))
	}
	ic := &pod.InitContainers[0]
	if ic.SecurityContext == nil || ic.SecurityContext.Privileged == nil || !*ic.SecurityContext.Privileged {
		t.Errorf("init container %s is not privileged (tune apply writes sysctls)", ic.Name)
	}
	if len(ic.Args) < 2 || ic.Args[0] != "tune" || ic.Args[1] != "apply" {
		t.Errorf("init container args %q, want tune apply", ic.Args)
	}
	i := slices.Index(ic.Args, "--only-if")
	if i < 0 || i+1 >= len(ic.Args) || ic.Args[i+1] != "$(MQBLAST_TUNE)" {
		t.Errorf("init container args %q: not gated by --only-if $(MQBLAST_TUNE)", ic.Args)
	}
	if e := envOf(ic, "MQBLAST_TUNE"); e == nil || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil ||
		e.ValueFrom.ConfigMapKeyRef.Name != "mqblast" || e.ValueFrom.ConfigMapKeyRef.Key != "tune" {
		t.Errorf("MQBLAST_TUNE %+v, want the ConfigMap mqblast's key tune", e)
	}
}

// TestConfigMapManifest: configmap.yaml is a core/v1 ConfigMap with every key job.yaml
// reads, the tune gate off by default, and a valid mqblast scenario.
func TestConfigMapManifest(t *testing.T) {
	var cm corev1.ConfigMap
	decodeStrict(t, "configmap.yaml", &cm)
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Name != "mqblast" {
		t.Fatalf("%s %s %s, want v1 ConfigMap mqblast", cm.APIVersion, cm.Kind, cm.Name)
	}
	for _, k := range []string{"broker", "tune", "connections", "scenario.json"} {
		if _, ok := cm.Data[k]; !ok {
			t.Errorf("no key %s", k)
		}
	}
	if on, err := strconv.ParseBool(cm.Data["tune"]); err != nil || on {
		t.Errorf("tune %q: want false, so that nodes are changed only when asked", cm.Data["tune"])
	}
	if _, err := strconv.Atoi(cm.Data["connections"]); err != nil {
		t.Errorf("connections %q: %v", cm.Data["connections"], err)
	}
	s, err := scenario.Parse("configmap.yaml:scenario.json", []byte(cm.Data["scenario.json"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestImageBuild builds the Dockerfile when a container engine is here (docker with a
// daemon, podman or buildah); CI has none, and the test skips.
func TestImageBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	var tool []string
	switch {
	case exec.Command("docker", "info").Run() == nil:
		tool = []string{"docker", "build"}
	case lookPath("podman"):
		tool = []string{"podman", "build"}
	case lookPath("buildah"):
		tool = []string{"buildah", "bud"}
	default:
		t.Skip("no container engine (docker info fails; no podman or buildah)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(tool[0], append(tool[1:], "-t", "mqblast:test", "-f", filepath.Join(root, "Dockerfile"), root)...)
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", c.Args, err, out)
	}
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
