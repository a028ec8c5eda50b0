//go:build !unix

package nativetool

import "os/exec"

// Process groups are a unix notion; elsewhere only the plugin process
// itself is stopped.

func setProcessGroup(*exec.Cmd) {}

func signalGroup(int, bool) {}

func groupAlive(int) bool { return false }

func processGone(int) bool { return false }
