// libmicrohttpd (libmicrohttpd12): the HTTP server of `rcadmin fleet exporter`.
#include <stdarg.h>
#include <sys/socket.h>
#include <microhttpd.h>

#include "LazyLibrary.h"

#define RC_LAZY_THIS RC_LAZY_MICROHTTPD
typedef struct MHD_Daemon *(*rc_mhd_start_daemon_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                                     MHD_AccessHandlerCallback, void *, va_list);
#define MICROHTTPD_FUNCTIONS(F, P, V)                                                                            \
    V(struct MHD_Daemon *, MHD_start_daemon,                                                                     \
      (unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,                           \
       MHD_AccessHandlerCallback dh, void *dh_cls, ...),                                                         \
      ())                                                                                                        \
    F(struct MHD_Daemon *, MHD_start_daemon_va,                                                                  \
      (unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,                           \
       MHD_AccessHandlerCallback dh, void *dh_cls, va_list ap),                                                  \
      (flags, port, apc, apc_cls, dh, dh_cls, ap))                                                               \
    P(void, MHD_stop_daemon, (struct MHD_Daemon * daemon), (daemon))                                             \
    V(const union MHD_ConnectionInfo *, MHD_get_connection_info,                                                 \
      (struct MHD_Connection * connection, enum MHD_ConnectionInfoType info_type, ...), ())                      \
    F(struct MHD_Response *, MHD_create_response_from_buffer,                                                    \
      (size_t size, void *buffer, enum MHD_ResponseMemoryMode mode), (size, buffer, mode))                       \
    F(struct MHD_Response *, MHD_create_response_from_iovec,                                                     \
      (const struct MHD_IoVec *iov, unsigned int iovcnt, MHD_ContentReaderFreeCallback free_cb, void *cls),      \
      (iov, iovcnt, free_cb, cls))                                                                               \
    P(void, MHD_destroy_response, (struct MHD_Response * response), (response))                                  \
    F(enum MHD_Result, MHD_add_response_header,                                                                  \
      (struct MHD_Response * response, const char *header, const char *content), (response, header, content))    \
    F(enum MHD_Result, MHD_queue_response,                                                                       \
      (struct MHD_Connection * connection, unsigned int status_code, struct MHD_Response *response),             \
      (connection, status_code, response))

RC_LAZY_DEFINE(rc_lazy_microhttpd, "libmicrohttpd.so.12", "libmicrohttpd12", "the fleet exporter (HTTP server)", NULL,
               MICROHTTPD_FUNCTIONS)

// The variadic one, forwarded to the library's va_list form: only the library reads its options.
struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...) {
    rc_mhd_start_daemon_va real =
        (rc_mhd_start_daemon_va)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_MHD_start_daemon_va);
    va_list arguments;
    va_start(arguments, dh_cls);
    struct MHD_Daemon *daemon = real(flags, port, apc, apc_cls, dh, dh_cls, arguments);
    va_end(arguments);
    return daemon;
}

// Variadic too, but no option read here takes an argument: called with none.
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection,
                                                        enum MHD_ConnectionInfoType info_type, ...) {
    typedef const union MHD_ConnectionInfo *(*variadic)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
    variadic real = (variadic)rc_lazy_function(RC_LAZY_THIS, RC_LAZY_INDEX_MHD_get_connection_info);
    return real(connection, info_type);
}
