#ifndef RCAGENT_CMICROHTTPD_SHIM_H
#define RCAGENT_CMICROHTTPD_SHIM_H
#include <microhttpd.h>

// MHD_start_daemon is variadic (option, value pairs): Swift cannot call it, so one wrapper with
// the options the fleet exporter sets, on a socket it has bound itself.
static inline struct MHD_Daemon *rc_mhd_start(unsigned int flags, int listen_socket, unsigned int connection_limit,
                                              unsigned int timeout_seconds, size_t memory_limit,
                                              MHD_AccessHandlerCallback handler, void *context) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context, MHD_OPTION_LISTEN_SOCKET, listen_socket,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
                            timeout_seconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit, MHD_OPTION_END);
}
#endif
