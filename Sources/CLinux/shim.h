#ifndef RCAGENT_CLINUX_SHIM_H
#define RCAGENT_CLINUX_SHIM_H
// Linux interfaces Swift's Glibc module leaves out (libc itself, nothing to link).
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// accept4(2) is a _GNU_SOURCE declaration the Glibc module does not export: the accepted descriptor
// is close-on-exec from birth, so a hook forked at that moment cannot inherit it.
static inline int rcagent_accept_cloexec(int fd) {
    return (int)syscall(SYS_accept4, fd, (void *)0, (void *)0, SOCK_CLOEXEC);
}

// setfsgid(2) (also _GNU_SOURCE only): the group new files get, for the calling thread alone.
static inline int rcagent_setfsgid(unsigned int gid) { return (int)syscall(SYS_setfsgid, gid); }
#endif
