#ifndef MANAGEDSTORE_CMICROHTTPD_SHIM_H
#define MANAGEDSTORE_CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
// For the streams taken out of libmicrohttpd (StreamPump.swift): Glibc's module has neither.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <microhttpd.h>

// MHD_get_connection_info is variadic, so Swift cannot call it: these ask it the three
// things the server needs, each a plain read of the connection's own fields.

/// The pointer the server stored for this connection when MHD said it started.
static inline void *managedstore_connection_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

/// The connection's socket (-1 when MHD does not say).
static inline int managedstore_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// The client's address (NULL when MHD does not say).
static inline const struct sockaddr *managedstore_connection_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
#endif
