package framework

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child: etcd or a kube-apiserver. It runs in its own process
// group (so stopping it stops anything it forked) and gets SIGKILL if the
// test binary dies (Pdeathsig), so a killed `go test` leaves nothing behind.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	log     *os.File
	done    chan struct{} // closed when the process has exited
	waitErr error         // valid after done is closed
}

// live is every process started and not yet reaped, and every temporary
// control-plane directory not yet removed, for the signal handler installed
// by [Main].
var live = struct {
	sync.Mutex
	procs map[*process]bool
	dirs  map[string]bool
}{procs: map[*process]bool{}, dirs: map[string]bool{}}

func registerDir(dir string, on bool) {
	live.Lock()
	defer live.Unlock()
	if on {
		live.dirs[dir] = true
	} else {
		delete(live.dirs, dir)
	}
}

// startProcess starts path with args, its stdout and stderr appended to
// logPath. A non-empty hostname runs it in a UTS namespace of its own with
// that hostname (kube-apiserver derives its identity lease from the
// hostname); that needs root.
func startProcess(name, path string, args []string, logPath, hostname string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "# %s %s\n", path, strings.Join(args, " "))
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd := exec.Command(path, args...)
	if hostname != "" {
		// sh execs the server, which keeps the pid, the process group and
		// the parent-death signal.
		sh := []string{"-c", `echo "$0" > /proc/sys/kernel/hostname && exec "$@"`, hostname, path}
		cmd = exec.Command("/bin/sh", append(sh, args...)...)
		attr.Cloneflags = syscall.CLONE_NEWUTS
	}
	cmd.SysProcAttr = attr
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	p := &process{name: name, cmd: cmd, logPath: logPath, log: log, done: make(chan struct{})}
	live.Lock()
	defer live.Unlock()
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	live.procs[p] = true
	go func() {
		p.waitErr = cmd.Wait()
		log.Close()
		live.Lock()
		delete(live.procs, p)
		live.Unlock()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group.
func (p *process) signal(sig syscall.Signal) {
	if p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop sends SIGTERM, waits up to grace for the process to exit, then kills
// its process group. It returns once the process is reaped.
func (p *process) stop(grace time.Duration) {
	if p.exited() {
		p.signal(syscall.SIGKILL) // anything left in its group
		return
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	p.signal(syscall.SIGKILL)
	<-p.done
}

// killAll kills every live process group; it is for the signal handler.
// With removeDirs, it then removes the temporary directories of the
// control planes those processes belonged to.
func killAll(removeDirs bool) {
	live.Lock()
	procs := make([]*process, 0, len(live.procs))
	for p := range live.procs {
		procs = append(procs, p)
	}
	live.Unlock()
	for _, p := range procs {
		p.signal(syscall.SIGKILL)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	}
	if removeDirs {
		live.Lock()
		for d := range live.dirs {
			os.RemoveAll(d)
			delete(live.dirs, d)
		}
		live.Unlock()
	}
}

// tail returns the last n lines of the process's log.
func (p *process) tail(n int) string {
	return tailFile(p.logPath, n)
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago. The
// caller starts its server on it and retries with another port if the bind
// fails (see [errAddrInUse]).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// errAddrInUse marks a start that failed because a port was taken in the
// meantime; the caller picks new ports and tries again.
var errAddrInUse = errors.New("address already in use")

// exitError describes a process that ended while it should be starting,
// with the end of its log. It wraps errAddrInUse for a bind failure.
func (p *process) exitError() error {
	tail := p.tail(40)
	err := fmt.Errorf("%s exited (%v); end of %s:\n%s", p.name, p.waitErr, p.logPath, tail)
	if strings.Contains(tail, "address already in use") {
		return fmt.Errorf("%w: %w", errAddrInUse, err)
	}
	return err
}

// peakRSS returns the process's resident-set high-water mark (VmHWM) in
// bytes, or 0 once it has exited.
func (p *process) peakRSS() int64 {
	if p.exited() {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb * 1024
		}
	}
	return 0
}
