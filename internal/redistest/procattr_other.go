//go:build !linux

package redistest

import "syscall"

// procAttr has nothing to add where the parent-death signal does not exist;
// there an interrupted test binary can leave its servers running.
func procAttr() *syscall.SysProcAttr { return nil }
