#ifndef RCAGENT_CLINUX_SHIM_H
#define RCAGENT_CLINUX_SHIM_H
// Linux interfaces Swift's Glibc module leaves out (libc itself, nothing to link).
#include <sys/timerfd.h>
#endif
