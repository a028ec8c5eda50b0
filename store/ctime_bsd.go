//go:build unix && !linux && !darwin

package store

import "syscall"

func ctimeNs(*syscall.Stat_t) int64 { return 0 }
