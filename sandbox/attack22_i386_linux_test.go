package sandbox

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/testkit"
)

// i386Syscall makes syscalls through the i386 ABI (int $0x80) from a 64-bit
// process: it maps x86-64 code below 4 GiB (MAP_32BIT, so the pointers fit
// the 32-bit registers) and calls it with ctypes. Python is single-threaded,
// so unshare(CLONE_NEWUSER) can succeed. argv: connect PATH | unshare.
const i386Syscall = `
import ctypes, mmap, socket, struct, sys
m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40,
              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
# push rbx; mov eax,edi; mov ebx,esi; xchg ecx,edx; int 0x80; pop rbx; movsxd rax,eax; ret
m.write(bytes([0x53, 0x89, 0xF8, 0x89, 0xF3, 0x87, 0xD1, 0xCD, 0x80, 0x5B, 0x48, 0x63, 0xC0, 0xC3]))
base = ctypes.addressof(ctypes.c_char.from_buffer(m))
call = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)(base)
if sys.argv[1] == 'connect':
    sa = struct.pack('H', socket.AF_UNIX) + sys.argv[2].encode() + b'\0'
    ctypes.memmove(base + 256, sa, len(sa))
    fd = call(359, socket.AF_UNIX, socket.SOCK_STREAM, 0)  # i386 socket
    print('i386 socket(AF_UNIX) =', fd)
    if fd < 0:
        sys.exit(1)
    r = call(362, fd, base + 256, len(sa))  # i386 connect
    print('i386 connect =', r)
    if r != 0:
        sys.exit(1)
    print('read:', socket.socket(fileno=fd).recv(64).decode())
else:
    r = call(310, 0x10000000, 0, 0)  # i386 unshare(CLONE_NEWUSER)
    print('i386 unshare(CLONE_NEWUSER) =', r)
    if r != 0:
        sys.exit(1)
print('ok')
`

// TestAttack22I386ABI: the seccomp filter is written for the native
// syscall numbers; a server that enters the kernel through int $0x80 uses
// the i386 table, where go-seccomp-bpf's program allows everything. The
// filter must refuse every syscall of a foreign arch (it kills the
// process), so the i386 socket(AF_UNIX)+connect to a pathname socket and
// unshare(CLONE_NEWUSER) work unconfined (the control) and fail confined.
func TestAttack22I386ABI(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("int $0x80 is an x86-64 host's i386 ABI")
	}
	if !Probe().Seccomp {
		t.Skip("needs seccomp")
	}
	w := newWorld(t)
	path := filepath.Join(w.secret, "agent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SECRET-FROM-AGENT"))
			c.Close()
		}
	}()
	for _, args := range [][]string{{"connect", path}, {"unshare"}} {
		out, ok := runPython(t, nil, i386Syscall, args...)
		if !ok {
			// no IA-32 emulation (CONFIG_IA32_EMULATION off, or
			// ia32_emulation=0): the attack does not exist here
			why := "the i386 ABI is unavailable on this host, so the attack proves nothing: " + out
			if os.Getenv(testkit.RequireRootEnv) != "" && os.Geteuid() == 0 {
				t.Fatal(why)
			}
			t.Skip(why)
		}
		out, ok = runPython(t, w.policy(), i386Syscall, args...)
		if ok || strings.Contains(out, "SECRET") {
			t.Fatalf("confined i386 %v worked: %s", args, out)
		}
		t.Logf("confined i386 %v: %q", args, out)
	}
}
