//go:build linux

package nativetool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
)

// Kill ends the plugin and every process it started in its group.
func TestKillStopsProcessGroup(t *testing.T) {
	c := launchSelf(t, nil)
	r, err := c.CallTool(context.Background(), "spawn", nil)
	if err != nil || r.IsError {
		t.Fatalf("spawn: %v %v", err, r)
	}
	var child struct{ PID int }
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &child); err != nil {
		t.Fatal(err)
	}
	pgid := c.Pid()
	if got, err := syscall.Getpgid(child.PID); err != nil || got != pgid {
		t.Fatalf("child %d is in group %d (%v), want the plugin's group %d", child.PID, got, err, pgid)
	}
	if pgid == syscall.Getpgrp() {
		t.Fatal("the plugin shares berth's process group")
	}
	if m := groupMembers(t, pgid); len(m) != 2 {
		t.Fatalf("group %d has %v, want the plugin and its child", pgid, m)
	}
	c.Kill()
	if !c.Exited() {
		t.Error("Exited() = false after Kill")
	}
	if m := groupMembers(t, pgid); len(m) != 0 {
		t.Fatalf("processes %v of group %d survived Kill", m, pgid)
	}
}

// A plugin that dies between calls, leaving a child that holds its stdout
// and stderr open, is reported exited, and Kill ends the child.
func TestPluginDiesLeavingChild(t *testing.T) {
	c := launchSelf(t, nil)
	r, err := c.CallTool(context.Background(), "orphan", nil)
	if err != nil || r.IsError {
		t.Fatalf("orphan: %v %v", err, r)
	}
	var child struct{ PID int }
	if err := json.Unmarshal(r.StructuredContent.(json.RawMessage), &child); err != nil {
		t.Fatal(err)
	}
	pgid := c.Pid()
	testkit.Eventually(t, 10*time.Second, "Exited", c.Exited)
	if c.pc.Exited() {
		t.Log("go-plugin noticed the exit itself; the child did not hold the pipes")
	}
	if m := groupMembers(t, pgid); !slices.Contains(m, child.PID) {
		t.Fatalf("the child %d is not running (group %v)", child.PID, m)
	}
	start := time.Now()
	c.Kill()
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("Kill took %v", d)
	}
	if m := groupMembers(t, pgid); len(m) != 0 {
		t.Fatalf("processes %v of group %d survived Kill", m, pgid)
	}
	if _, err := c.CallTool(context.Background(), "echo", nil); !errors.Is(err, ErrExited) {
		t.Errorf("a call after the plugin died = %v, want ErrExited", err)
	}
}

// groupMembers lists the live (not zombie) processes of a process group,
// from /proc.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}
