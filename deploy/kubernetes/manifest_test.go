package kubernetes

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
// the ConfigMap and run as root, the run's flags for --shard auto, --start-at, the Job's uid
// as every pod's --run-id and a JSON result on stdout, as a non-root user.
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
	// One run identity for every pod: the Job's uid, a label Kubernetes sets on each of its pods.
	if e := envOf(c, "MQBLAST_RUN_ID"); e == nil || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.labels['"+batchv1.ControllerUidLabel+"']" {
		t.Errorf("MQBLAST_RUN_ID %+v, want the pod's label %s (the Job's uid, the same in every pod)", e, batchv1.ControllerUidLabel)
	}
	for _, want := range [][]string{{"--shard", "auto"}, {"--start-at", "$(START_AT)"}, {"--run-id", "$(MQBLAST_RUN_ID)"},
		{"--format", "json"}, {"--broker", "$(MQBLAST_BROKER)"}} {
		i := slices.Index(c.Args, want[0])
		if i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != want[1] {
			t.Errorf("args %q lack %s %s", c.Args, want[0], want[1])
		}
	}
	if len(c.Args) < 2 || c.Args[0] != "run" {
		t.Fatalf("args %q, want run SCENARIO ...", c.Args)
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container %s securityContext %+v, want runAsNonRoot (the image's user 65532; the run needs no root)", c.Name, sc)
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
	if ic.SecurityContext == nil || ic.SecurityContext.RunAsUser == nil || *ic.SecurityContext.RunAsUser != 0 {
		t.Errorf("init container %s does not run as user 0 (the image's user is 65532, and only root writes sysctls)", ic.Name)
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

// imageEngine is the container engine on this host: docker when its daemon answers, else
// podman or buildah when installed, as make image picks. The image tests skip without one.
func imageEngine(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short")
	}
	switch {
	case exec.Command("docker", "info").Run() == nil:
		return "docker"
	case lookPath("podman"):
		return "podman"
	case lookPath("buildah"):
		return "buildah"
	}
	t.Skip("no container engine (docker info fails; no podman or buildah)")
	return ""
}

const testImage = "mqblast:test"

var built struct {
	once sync.Once
	out  []byte
	err  error
}

// buildImage runs make image with engine (once per test process): the build of bin/mqblast
// and the scratch image around it, without a registry.
func buildImage(t *testing.T, engine string) {
	t.Helper()
	built.once.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			built.err = err
			return
		}
		c := exec.Command("make", "-C", root, "image", "IMAGE="+testImage, "IMAGE_TOOL="+engine,
			"IMAGE_CONTEXT="+filepath.Join(t.TempDir(), "image"))
		built.out, built.err = c.CombinedOutput()
		if built.err != nil {
			built.err = fmt.Errorf("%q: %w\n%s", c.Args, built.err, built.out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
}

// TestImageBuild builds the image with make image wherever a container engine is (no
// registry is asked: the base is scratch), then checks its configuration (the non-root
// user 65532, the entrypoint) and, with docker or podman, its files: a static binary,
// the CA bundle, the user in /etc/passwd and a world-writable /tmp. Creating and
// exporting a container does not start it.
func TestImageBuild(t *testing.T) {
	engine := imageEngine(t)
	buildImage(t, engine)

	inspect := []string{engine, "image", "inspect", "--format", "{{.Config.User}} {{json .Config.Entrypoint}}", testImage}
	if engine == "buildah" {
		inspect = []string{"buildah", "inspect", "--type", "image", "--format", "{{.OCIv1.Config.User}} {{json .OCIv1.Config.Entrypoint}}", testImage}
	}
	out, err := exec.Command(inspect[0], inspect[1:]...).Output()
	if err != nil {
		t.Fatalf("%q: %v", inspect, err)
	}
	if got, want := strings.TrimSpace(string(out)), `65532:65532 ["/usr/local/bin/mqblast"]`; got != want {
		t.Errorf("user and entrypoint %s, want %s", got, want)
	}
	if engine == "buildah" {
		t.Log("buildah: the image's files are not checked (no container export)")
		return
	}

	id, err := exec.Command(engine, "create", testImage, "version").Output()
	if err != nil {
		t.Fatalf("%s create: %v", engine, err)
	}
	ctr := strings.TrimSpace(string(id))
	defer exec.Command(engine, "rm", "-f", ctr).Run() //nolint:errcheck
	files := map[string][]byte{}
	modes := map[string]os.FileMode{}
	tarball, err := exec.Command(engine, "export", ctr).Output()
	if err != nil {
		t.Fatalf("%s export: %v", engine, err)
	}
	tr := tar.NewReader(bytes.NewReader(tarball))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "/"), "/")
		modes[name] = h.FileInfo().Mode()
		if h.Typeflag == tar.TypeReg {
			if files[name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := modes["usr/local/bin/mqblast"]; !m.IsRegular() || m.Perm() != 0o755 {
		t.Errorf("usr/local/bin/mqblast mode %v, want -rwxr-xr-x", m)
	} else if f, err := elf.NewFile(bytes.NewReader(files["usr/local/bin/mqblast"])); err != nil {
		t.Errorf("usr/local/bin/mqblast: %v", err)
	} else {
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("usr/local/bin/mqblast has an ELF interpreter: not static, it cannot run on scratch")
			}
		}
	}
	if ca := files["etc/ssl/certs/ca-certificates.crt"]; !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		t.Errorf("etc/ssl/certs/ca-certificates.crt: no certificate in %d bytes", len(ca))
	}
	if !strings.Contains(string(files["etc/passwd"]), ":x:65532:65532:") || !strings.Contains(string(files["etc/group"]), ":x:65532:") {
		t.Errorf("user 65532 not in etc/passwd %q or etc/group %q", files["etc/passwd"], files["etc/group"])
	}
	if m := modes["tmp"]; !m.IsDir() || m.Perm() != 0o777 || m&os.ModeSticky == 0 {
		t.Errorf("tmp mode %v, want dtrwxrwxrwx (worker processes write their scenario there)", m)
	}
}

// TestImageRun starts the image: mqblast version as the user 65532. Where the engine builds
// images but cannot start containers (podman under crun without CAP_SYS_RESOURCE cannot set
// the container's rlimits), it skips and says so.
func TestImageRun(t *testing.T) {
	engine := imageEngine(t)
	if engine == "buildah" {
		t.Skip("buildah builds images but does not run them")
	}
	buildImage(t, engine)
	c := exec.Command(engine, "run", "--rm", testImage, "version")
	out, err := c.CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("setrlimit")) {
		t.Skipf("%s cannot start containers here (crun cannot set rlimits without CAP_SYS_RESOURCE): %s", engine, bytes.TrimSpace(out))
	}
	if err != nil {
		t.Fatalf("%q: %v\n%s", c.Args, err, out)
	}
	if !strings.HasPrefix(string(out), "mqblast ") {
		t.Errorf("%q printed %q, want mqblast VERSION ...", c.Args, out)
	}
}

func lookPath(name string) bool {
	_, err := exec.LookPath(name)
	return err == nil
}
