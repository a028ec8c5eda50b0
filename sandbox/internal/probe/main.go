//go:build linux

// Command probe is the sandbox tests' hostile server: each subcommand tries
// one thing a confined server must not do (or must still do) and prints
// "ok" and exits 0 when it worked, or prints the error and exits 1.
// Only tests build it.
package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fail(fmt.Errorf("usage: probe COMMAND [ARG]"))
	}
	arg := ""
	if len(os.Args) > 2 {
		arg = os.Args[2]
	}
	var err error
	switch os.Args[1] {
	case "echo":
		// A line in, the same line out, until EOF: the benchmark's server.
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Println(in.Text())
		}
		return
	case "true":
	case "read":
		_, err = os.ReadFile(arg)
	case "list":
		_, err = os.ReadDir(arg)
	case "write":
		err = os.WriteFile(arg, []byte("written by probe\n"), 0o755)
	case "exec":
		// runs a program with the rest of the arguments
		out, rerr := exec.Command(arg, os.Args[3:]...).CombinedOutput()
		if rerr != nil {
			err = fmt.Errorf("%v: %s", rerr, out)
		}
	case "read-some":
		var f *os.File
		f, err = os.Open(arg)
		if err == nil {
			_, err = f.Read(make([]byte, 16))
			f.Close()
		}
	case "env":
		fmt.Println(os.Getenv(arg))
		return
	case "connect":
		// arg is tcp:HOST:PORT, unix:PATH or abstract:NAME
		network, addr, _ := strings.Cut(arg, ":")
		if network == "abstract" {
			network, addr = "unix", "@"+addr
		}
		var c net.Conn
		c, err = net.DialTimeout(network, addr, 2*time.Second)
		if err == nil {
			c.Close()
		}
	case "unixsocket":
		var fd int
		fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
	case "unixsocket-hi":
		// AF_UNIX with garbage in the upper half of the int argument
		r, _, e := unix.RawSyscall(unix.SYS_SOCKET, 1<<32|unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if e != 0 {
			err = e
		} else {
			unix.Close(int(r))
		}
	case "rawsocket":
		var fd int
		fd, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
		if err == nil {
			unix.Close(fd)
		}
	case "kill":
		var pid int
		pid, err = strconv.Atoi(arg)
		if err == nil {
			err = syscall.Kill(pid, syscall.Signal(0))
		}
	case "ptrace":
		var pid int
		pid, err = strconv.Atoi(arg)
		if err == nil {
			runtime.LockOSThread()
			err = unix.PtraceAttach(pid)
			if err == nil {
				// the tracee stops; detaching lets it go on
				var ws unix.WaitStatus
				_, _ = unix.Wait4(pid, &ws, unix.WALL, nil)
				_ = unix.PtraceDetach(pid)
			}
		}
	case "ptrace-child":
		// ptrace a child of its own (same sandbox: only seccomp stops it).
		// The tracer is a thread: attach and detach from the same one, or
		// the child stays stopped and Wait never returns.
		runtime.LockOSThread()
		child := exec.Command("/proc/self/exe", "echo")
		stdin, _ := child.StdinPipe()
		if err = child.Start(); err == nil {
			err = unix.PtraceAttach(child.Process.Pid)
			if err == nil {
				var ws unix.WaitStatus
				for {
					if _, werr := unix.Wait4(child.Process.Pid, &ws, 0, nil); werr != unix.EINTR {
						break
					}
				}
				_ = unix.PtraceDetach(child.Process.Pid)
				// The attach's SIGSTOP may land after the detach: the
				// child then stops with no tracer, and Wait below never
				// returned (TestPtrace's unconfined control hung about
				// one run in twenty).
				_ = child.Process.Signal(syscall.SIGCONT)
			}
			stdin.Close()
			_ = child.Wait()
		}
	case "listen":
		var ln net.Listener
		ln, err = net.Listen("tcp4", "127.0.0.1:0")
		if err == nil {
			ln.Close()
		}
	case "proxy":
		// connects to the proxy its environment names and says hello
		u := strings.TrimPrefix(os.Getenv("HTTPS_PROXY"), "http://")
		var c net.Conn
		c, err = net.DialTimeout("tcp", u, 2*time.Second)
		if err == nil {
			_, err = fmt.Fprintln(c, "hello from inside")
			c.Close()
		}
	case "udp":
		var c net.Conn
		c, err = net.Dial("udp", arg)
		if err == nil {
			_, err = c.Write([]byte("exfiltrated"))
			c.Close()
		}
	case "tiocsti":
		// pushes a character into the input of the terminal on stdin
		c := byte('#')
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, unix.TIOCSTI, uintptr(unsafe.Pointer(&c)))
		if e != 0 {
			err = e
		}
	case "unshare":
		err = unix.Unshare(unix.CLONE_NEWUSER)
	case "clone-newuser":
		cmd := exec.Command("/proc/self/exe", "true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		err = cmd.Run()
	case "caps":
		// prints the effective, permitted and bounding capability sets
		data, rerr := os.ReadFile("/proc/self/status")
		if rerr != nil {
			fail(rerr)
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "Cap") {
				fmt.Println(l)
			}
		}
		return
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	fmt.Println("ok")
}

func fail(err error) {
	fmt.Println("error:", err)
	os.Exit(1)
}
