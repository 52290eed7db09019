// The seccomp filter every sandboxed command of a worktree child runs under (bubblewrap loads it
// with `--seccomp FD`): a classic BPF program, built here as bytes. Pure: no I/O.
//
// Why a filter at all: a new network namespace (`--unshare-net`) cuts the host's TCP and abstract
// unix sockets, but not a *pathname* unix socket (the user's ssh-agent, docker.sock, the D-Bus
// session bus: `systemd-run --user` runs anything outside). `connect()` to one needs only write
// permission on the socket's inode, which a read-only mount does not take away, and it can live
// anywhere the user can read (a list of known paths misses the one in the home directory). So the
// filter refuses to make such a socket at all:
// - `socket()` is allowed for AF_INET, AF_INET6 (the sandbox's own loopback, and the proxy when
//   hosts are allowed) and AF_NETLINK (`ip`, getifaddrs); every other family is refused with EPERM:
//   AF_UNIX above all, AF_VSOCK (a virtual machine's host), AF_PACKET, …;
// - `socketpair()` is allowed for stream and seqpacket pairs (a test runner and its workers, node's
//   child process pipes): such a pair is connected already and cannot be pointed elsewhere; a
//   datagram pair is refused (a datagram socket can `sendto()` any pathname socket);
// - io_uring is refused with ENOSYS (its requests make sockets without the calls above; programs
//   fall back to ordinary calls, as under Docker's default profile);
// - the kernel keyring calls (keyctl, add_key, request_key) are refused: the user's keys are not
//   the child's;
// - a call through another ABI of the same CPU (i386 or x32 on x86_64, 32-bit ARM on arm64) that
//   could reach the same kernel code under another number is refused the same way.
// What it costs: a dozen instructions per system call (measured with the rest of the sandbox:
// `npm run bench:sandbox`). What breaks: a program that binds or connects a pathname unix socket of
// its own (some language servers, databases' local sockets, X11 clients); the docs say so.

/** The CPU architectures this filter is written for (process.arch), with their system call numbers. */
interface ArchTable {
  /** AUDIT_ARCH_* of the native ABI */
  audit: number;
  socket: number;
  socketpair: number;
  keyring: readonly number[];
  /** another ABI the same CPU runs: its AUDIT_ARCH_* and the calls refused there outright */
  compat?: { audit: number; refused: readonly number[] };
  /** x86_64's x32 ABI: same AUDIT_ARCH, numbers with this bit set; refused outright */
  x32Bit?: number;
}

const IO_URING = [425, 426, 427] as const; // io_uring_setup, io_uring_enter, io_uring_register (the same on every ABI)

const ARCHES: Readonly<Record<string, ArchTable>> = {
  x64: {
    audit: 0xc000003e, // AUDIT_ARCH_X86_64
    socket: 41,
    socketpair: 53,
    keyring: [248, 249, 250], // add_key, request_key, keyctl
    // i386: socketcall (its argument is a pointer: refused whole), socket, socketpair, the keyring, io_uring
    compat: { audit: 0x40000003, refused: [102, 359, 360, 286, 287, 288, ...IO_URING] },
    x32Bit: 0x40000000,
  },
  arm64: {
    audit: 0xc00000b7, // AUDIT_ARCH_AARCH64
    socket: 198,
    socketpair: 199,
    keyring: [217, 218, 219],
    // 32-bit ARM (EABI): socket, socketpair, the keyring, io_uring
    compat: { audit: 0x40000028, refused: [281, 288, 309, 310, 311, ...IO_URING] },
  },
};

/** The socket families a sandboxed command may make: IPv4, IPv6, netlink. */
export const ALLOWED_FAMILIES = { AF_INET: 2, AF_INET6: 10, AF_NETLINK: 16 } as const;
/** The socketpair types it may make (the type argument's low bits): stream, seqpacket. */
export const ALLOWED_PAIR_TYPES = { SOCK_STREAM: 1, SOCK_SEQPACKET: 5 } as const;

const EPERM = 1;
const ENOSYS = 38;

// classic BPF (linux/filter.h, linux/seccomp.h)
const LD_W_ABS = 0x20;
const ALU_AND_K = 0x54;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const retErrno = (errno: number) => 0x00050000 | errno;
// struct seccomp_data: nr at 0, arch at 4, args[i] at 16 + 8 i (its low 32 bits first on little-endian CPUs)
const NR = 0;
const ARCH = 4;
const argLow = (i: number) => 16 + 8 * i;

type Op = { code: number; k: number; jt?: string; jf?: string; label?: string };

/** Assembles ops whose jumps name labels (forward only, as BPF requires) into sock_filter bytes. */
function assemble(ops: readonly Op[]): Buffer {
  const at = new Map<string, number>();
  ops.forEach((op, i) => op.label && at.set(op.label, i));
  const offset = (from: number, label?: string) => {
    if (label === undefined) return 0;
    const to = at.get(label);
    if (to === undefined || to <= from || to - from - 1 > 255) throw new Error(`seccomp: bad jump to ${label}`);
    return to - from - 1;
  };
  const out = Buffer.alloc(ops.length * 8);
  ops.forEach((op, i) => {
    out.writeUInt16LE(op.code, i * 8);
    out.writeUInt8(offset(i, op.jt), i * 8 + 2);
    out.writeUInt8(offset(i, op.jf), i * 8 + 3);
    out.writeUInt32LE(op.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The filter for `arch` (process.arch), as the bytes bubblewrap reads from `--seccomp FD`, or
 * undefined where no table is written (the probe then says the machine is not supported). Only
 * little-endian CPUs are listed: the argument offsets assume it.
 */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  const table = Object.hasOwn(ARCHES, arch) ? ARCHES[arch]! : undefined;
  if (!table) return undefined;
  const ops: Op[] = [];
  const op = (code: number, k: number, jt?: string, jf?: string, label?: string) => ops.push({ code, k, jt, jf, label });
  op(LD_W_ABS, ARCH);
  op(JEQ_K, table.audit, "native", table.compat ? "compat" : "deny");
  // the native ABI
  op(LD_W_ABS, NR, undefined, undefined, "native");
  if (table.x32Bit) op(JSET_K, table.x32Bit, "deny");
  op(JEQ_K, table.socket, "socket");
  op(JEQ_K, table.socketpair, "pair");
  for (const nr of table.keyring) op(JEQ_K, nr, "deny");
  for (const nr of IO_URING) op(JEQ_K, nr, "nosys");
  op(RET_K, RET_ALLOW);
  // socket(domain, …): the families above only
  op(LD_W_ABS, argLow(0), undefined, undefined, "socket");
  for (const family of Object.values(ALLOWED_FAMILIES)) op(JEQ_K, family, "allow");
  op(RET_K, retErrno(EPERM));
  // socketpair(domain, type, …): stream and seqpacket pairs only (SOCK_NONBLOCK and SOCK_CLOEXEC are high bits)
  op(LD_W_ABS, argLow(1), undefined, undefined, "pair");
  op(ALU_AND_K, 0xf);
  for (const type of Object.values(ALLOWED_PAIR_TYPES)) op(JEQ_K, type, "allow");
  op(RET_K, retErrno(EPERM));
  // the other ABI of the same CPU
  if (table.compat) {
    op(LD_W_ABS, ARCH, undefined, undefined, "compat");
    op(JEQ_K, table.compat.audit, undefined, "deny");
    op(LD_W_ABS, NR);
    for (const nr of table.compat.refused) op(JEQ_K, nr, "deny");
    op(RET_K, RET_ALLOW);
  }
  op(RET_K, RET_ALLOW, undefined, undefined, "allow");
  op(RET_K, retErrno(ENOSYS), undefined, undefined, "nosys");
  op(RET_K, retErrno(EPERM), undefined, undefined, "deny");
  return assemble(ops);
}
