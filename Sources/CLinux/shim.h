#ifndef RCAGENT_CLINUX_SHIM_H
#define RCAGENT_CLINUX_SHIM_H
// Linux interfaces Swift's Glibc module leaves out (libc itself, nothing to link).
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

// accept4(2) is a _GNU_SOURCE declaration the Glibc module does not export: the accepted descriptor
// is close-on-exec from birth, so a hook forked at that moment cannot inherit it.
static inline int rcagent_accept_cloexec(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, SOCK_CLOEXEC);
}

// setfsgid(2) (also _GNU_SOURCE only): the group new files get, for the calling thread alone.
static inline int rcagent_setfsgid(unsigned int gid) { return (int)syscall(SYS_setfsgid, gid); }

// glibc 2.34's posix_spawn_file_actions_addclosefrom_np, declared only under _GNU_SOURCE: the spawned
// hook gets no descriptor above stderr, whoever opened it and however.
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

// pipe2(2) with O_CLOEXEC (_GNU_SOURCE only): a hook's pipes must not leak into another hook.
static inline int rcagent_pipe_cloexec(int fds[2]) { return (int)syscall(SYS_pipe2, fds, O_CLOEXEC); }
#endif
