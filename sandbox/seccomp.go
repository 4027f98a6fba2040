package sandbox

import (
	"encoding/binary"
	"runtime"
	"syscall"
)

// This file builds the seccomp filter of a sandbox that has no user
// namespace of its own (Switchboard runs as root: see dropsPrivileges).
// Elsewhere bwrap's --disable-userns stops a server from making nested
// user namespaces; it works by a limit set inside the sandbox's own user
// namespace, so a sandbox without one needs another way: a filter that
// refuses unshare(2) and clone(2) with CLONE_NEWUSER. A user namespace
// gives its creator every capability inside it, which is where most
// kernel escapes of the last years began.
//
// clone3(2) passes its flags in memory that a filter cannot read, so it
// fails with ENOSYS, as in Flatpak's filter: the C libraries then fall
// back to clone(2), whose flags it can read.

// Classic BPF, as seccomp(2) and bwrap's --seccomp take it.
const (
	bpfLD   = 0x00
	bpfW    = 0x00
	bpfABS  = 0x20
	bpfALU  = 0x04
	bpfAND  = 0x50
	bpfJMP  = 0x05
	bpfJEQ  = 0x10
	bpfJSET = 0x40
	bpfK    = 0x00
	bpfRET  = 0x06

	seccompRetAllow = 0x7fff0000
	seccompRetErrno = 0x00050000

	// Offsets in struct seccomp_data.
	offNr   = 0
	offArch = 4
	offArg0 = 16 // its low half, on a little-endian machine

	cloneNewUser = 0x10000000
)

// abi is one system call table the filter covers.
type abi struct {
	arch                   uint32 // AUDIT_ARCH_*
	mask                   uint32 // applied to the number first (x32's bit off)
	unshare, clone, clone3 uint32
}

// abis returns the system call tables of this machine: its own and the
// 32-bit one its kernel also runs. A call of another table fails with
// ENOSYS.
func abis() []abi {
	switch runtime.GOARCH {
	case "amd64":
		return []abi{
			// x86-64 and x32 (the same numbers with bit 30 set).
			{arch: 0xc000003e, mask: 0xbfffffff, unshare: 272, clone: 56, clone3: 435},
			{arch: 0x40000003, mask: 0xffffffff, unshare: 310, clone: 120, clone3: 435}, // i386
		}
	case "arm64":
		return []abi{
			{arch: 0xc00000b7, mask: 0xffffffff, unshare: 97, clone: 220, clone3: 435},
			{arch: 0x40000028, mask: 0xffffffff, unshare: 337, clone: 120, clone3: 435}, // arm
		}
	}
	return nil
}

// noUserNSFilter returns the filter as bwrap's --seccomp reads it (an
// array of struct sock_filter in the machine's byte order), or nil on an
// architecture it does not know.
func noUserNSFilter() []byte {
	tables := abis()
	if len(tables) == 0 {
		return nil
	}
	// The program, with its jumps to labels resolved at the end (classic
	// BPF jumps only forward, by an offset).
	type insn struct {
		code   uint16
		k      uint32
		jt, jf string // labels; "" is the next instruction
	}
	var prog []insn
	labels := map[string]int{}
	label := func(name string) { labels[name] = len(prog) }
	add := func(code uint16, k uint32, jt, jf string) { prog = append(prog, insn{code, k, jt, jf}) }

	add(bpfLD|bpfW|bpfABS, offArch, "", "")
	for i, t := range tables {
		next := "table" + string(rune('1'+i))
		add(bpfJMP|bpfJEQ|bpfK, t.arch, "", next)
		add(bpfLD|bpfW|bpfABS, offNr, "", "")
		if t.mask != 0xffffffff {
			add(bpfALU|bpfAND|bpfK, t.mask, "", "")
		}
		add(bpfJMP|bpfJEQ|bpfK, t.clone3, "enosys", "")
		add(bpfJMP|bpfJEQ|bpfK, t.unshare, "flags", "")
		add(bpfJMP|bpfJEQ|bpfK, t.clone, "flags", "allow")
		label(next)
		if i < len(tables)-1 {
			// The next table's test needs the architecture again.
			add(bpfLD|bpfW|bpfABS, offArch, "", "")
		}
	}
	add(bpfRET|bpfK, seccompRetErrno|uint32(syscall.ENOSYS), "", "") // a table of none of these
	label("flags")
	add(bpfLD|bpfW|bpfABS, offArg0, "", "")
	add(bpfJMP|bpfJSET|bpfK, cloneNewUser, "eperm", "allow")
	label("allow")
	add(bpfRET|bpfK, seccompRetAllow, "", "")
	label("eperm")
	add(bpfRET|bpfK, seccompRetErrno|uint32(syscall.EPERM), "", "")
	label("enosys")
	add(bpfRET|bpfK, seccompRetErrno|uint32(syscall.ENOSYS), "", "")

	out := make([]byte, 0, 8*len(prog))
	for i, in := range prog {
		jump := func(l string) uint8 {
			if l == "" {
				return 0
			}
			return uint8(labels[l] - i - 1)
		}
		out = binary.NativeEndian.AppendUint16(out, in.code)
		out = append(out, jump(in.jt), jump(in.jf))
		out = binary.NativeEndian.AppendUint32(out, in.k)
	}
	return out
}
