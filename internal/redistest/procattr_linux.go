package redistest

import "syscall"

// procAttr makes the kernel kill redis-server when the test binary dies
// without running its cleanups, as on a -timeout panic, so no server is left
// running after the test process is gone. The signal follows the thread that
// started the child rather than the whole process; Go keeps its threads
// alive unless a goroutine exits while locked to one, which tests do not do.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
