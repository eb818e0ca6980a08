#ifndef RCAGENT_CSYSTEMD_SHIM_H
#define RCAGENT_CSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#endif
