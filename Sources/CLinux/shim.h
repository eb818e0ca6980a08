#ifndef RCAGENT_CLINUX_SHIM_H
#define RCAGENT_CLINUX_SHIM_H
// Linux interfaces Swift's Glibc module leaves out (libc itself, nothing to link).
//
// Only headers outside that module are included here (timerfd, the syscall numbers): a second module
// that includes one of its headers (sys/socket.h, unistd.h, fcntl.h, spawn.h) takes over their
// declarations in optimized builds, and files importing only Glibc lose them. What is needed from
// those headers is declared below instead.
#include <sys/timerfd.h>
#include <sys/syscall.h>

extern long syscall(long number, ...);

// SOCK_CLOEXEC and O_CLOEXEC: the same flag on Linux (asm-generic/fcntl.h).
#define RCAGENT_CLOEXEC 02000000

// accept4(2) is a _GNU_SOURCE declaration the Glibc module does not export: the accepted descriptor
// is close-on-exec from birth, so a hook forked at that moment cannot inherit it.
static inline int rcagent_accept_cloexec(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, RCAGENT_CLOEXEC);
}

// renameat2(2) with RENAME_EXCHANGE (Linux 3.15; glibc's wrapper is _GNU_SOURCE only): the two
// names swapped in one step, both files kept. -100 is AT_FDCWD, 2 RENAME_EXCHANGE (linux/fs.h).
static inline int rcagent_exchange(const char *a, const char *b) {
    return (int)syscall(SYS_renameat2, -100, a, -100, b, 2);
}

// setfsgid(2) (also _GNU_SOURCE only): the group new files get, for the calling thread alone.
static inline int rcagent_setfsgid(unsigned int gid) { return (int)syscall(SYS_setfsgid, gid); }

// setfsuid(2): the user the calling thread alone opens and creates files as (root writing in a
// directory another user owns, as that user: a link that user planted leads nowhere root can reach).
static inline int rcagent_setfsuid(unsigned int uid) { return (int)syscall(SYS_setfsuid, uid); }

// pipe2(2) with O_CLOEXEC (_GNU_SOURCE only): a hook's pipes must not leak into another hook.
static inline int rcagent_pipe_cloexec(int fds[2]) { return (int)syscall(SYS_pipe2, fds, RCAGENT_CLOEXEC); }

// prctl(PR_SET_DUMPABLE, 0) (sys/prctl.h is outside the Glibc module; 4 is PR_SET_DUMPABLE in
// linux/prctl.h): no core dump, no ptrace or /proc reading by other processes of the same user.
static inline int rcagent_set_undumpable(void) { return (int)syscall(SYS_prctl, 4, 0, 0, 0, 0); }

// pidfd_open(2) (Linux 5.3; glibc's wrapper is in sys/pidfd.h, outside the Glibc module): a
// descriptor that polls readable when the process exits, whoever else holds its pipes.
static inline int rcagent_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

// glibc 2.34's posix_spawn_file_actions_addclosefrom_np (_GNU_SOURCE only), taking the
// posix_spawn_file_actions_t as a plain pointer: the spawned hook gets no descriptor above stderr,
// whoever opened it and however.
extern int posix_spawn_file_actions_addclosefrom_np(void *actions, int from);

// glibc 2.29's posix_spawn_file_actions_addchdir_np (_GNU_SOURCE only), the same way: the child's
// working directory.
extern int posix_spawn_file_actions_addchdir_np(void *actions, const char *path);

// struct ucred, what getsockopt(SO_PEERCRED) fills in: glibc declares it in bits/socket.h under
// _GNU_SOURCE only, and that header is the Glibc module's (see above). The kernel's layout
// (include/linux/socket.h): pid_t, uid_t, gid_t, each 32 bits on every Linux architecture.
struct rcagent_ucred {
    int pid;
    unsigned int uid;
    unsigned int gid;
};
_Static_assert(sizeof(struct rcagent_ucred) == 12, "struct ucred is three 32-bit fields");

// struct sockaddr_nl (uapi linux/netlink.h), the address an rtnetlink socket binds to. Declared,
// not included: linux/netlink.h pulls in linux/posix_types.h, which Glibc's sys/socket.h also
// includes (through asm/socket.h), and two modules must not share a header (see above).
struct rcagent_sockaddr_nl {
    unsigned short nl_family; // AF_NETLINK
    unsigned short nl_pad;    // zero
    unsigned int nl_pid;      // the port id; 0: the kernel assigns one
    unsigned int nl_groups;   // multicast groups mask
};
_Static_assert(sizeof(struct rcagent_sockaddr_nl) == 12, "struct sockaddr_nl is 12 bytes");
// mallopt(3) and malloc_trim(3), declared, not included: malloc.h pulls in stdio.h, the Glibc module's.
// M_ARENA_MAX is -8 in glibc's malloc.h. One malloc arena for the daemon: each thread that ever
// allocated otherwise keeps an arena of its own (nine with an http source, MQTT and the report, 1.6
// MiB of idle PSS); malloc_trim(0) gives back the free pages inside every arena, not only its top.
extern int mallopt(int param, int value);
extern int malloc_trim(unsigned long pad);
static inline int rcagent_limit_malloc_arenas(int arenas) { return mallopt(-8, arenas); }
// The name this process was called by (argv[0] without its directory), as glibc keeps it from the
// start (errno.h, _GNU_SOURCE): the one executable runs rcagent or rcagentd by it, also where Swift's
// CommandLine.arguments comes out empty (under libfaketime's LD_PRELOAD).
extern char *program_invocation_short_name;
static inline const char *rcagent_program_name(void) { return program_invocation_short_name; }
#endif
