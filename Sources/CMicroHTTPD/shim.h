#ifndef RCAGENT_CMICROHTTPD_SHIM_H
#define RCAGENT_CMICROHTTPD_SHIM_H
#include <microhttpd.h>

// MHD_start_daemon is variadic (option, value pairs): Swift cannot call it, so one wrapper with
// the options the fleet exporter sets, on a socket it has bound itself.
static inline struct MHD_Daemon *rc_mhd_start(unsigned int flags, int listen_socket, unsigned int connection_limit,
                                              unsigned int timeout_seconds, size_t memory_limit,
                                              MHD_AccessHandlerCallback handler, void *context,
                                              MHD_NotifyConnectionCallback notify_connection,
                                              MHD_RequestCompletedCallback notify_completed) {
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, context, MHD_OPTION_LISTEN_SOCKET, listen_socket,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
                            timeout_seconds, MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_CONNECTION, notify_connection, context, MHD_OPTION_NOTIFY_COMPLETED,
                            notify_completed, context, MHD_OPTION_END);
}

// The descriptor of `connection` (-1 when the library does not say).
static inline int rc_mhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}
#endif
