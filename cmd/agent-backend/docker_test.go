package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDockerEntrypoint runs docker/entrypoint_test.sh (the entrypoint
// against a stub agent-backend) and shellcheck on both scripts and on the
// bench/*.sh side-by-side scripts. No Docker
// engine is needed.
func TestDockerEntrypoint(t *testing.T) {
	root := repoRoot(t)
	scripts := []string{filepath.Join(root, "docker-entrypoint.sh"), filepath.Join(root, "docker", "entrypoint_test.sh")}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", scripts[1]).CombinedOutput()
	if err != nil {
		t.Errorf("entrypoint tests: %v\n%s", err, out)
	}
	sc, err := exec.LookPath("shellcheck")
	need(t, err == nil, "shellcheck")
	if out, err := exec.CommandContext(ctx, sc, scripts...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
	bench, _ := filepath.Glob(filepath.Join(root, "bench", "*.sh"))
	if len(bench) == 0 {
		t.Fatal("no bench/*.sh scripts found")
	}
	check := exec.CommandContext(ctx, sc, append([]string{"-x"}, bench...)...)
	check.Dir = root // the scripts' "source=bench/lib.sh" directives are relative to it
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("shellcheck bench: %v\n%s", err, out)
	}
}
