// sd_notify(3) and sd_watchdog_enabled(3) written out, instead of loading libsystemd for them.
//
// They are the two functions of libsystemd the daemons use, and the protocol behind them is one of
// systemd's documented stable interfaces (sd_notify(3), "the notification protocol"): a datagram of
// newline-separated assignments to the AF_UNIX socket named by $NOTIFY_SOCKET ('@' for the abstract
// namespace), and the watchdog period in $WATCHDOG_USEC, for the process $WATCHDOG_PID if set.
// libsystemd would bring six libraries of its own (liblzma, libzstd, liblz4, libcap, libgcrypt,
// libgpg-error) into the daemon's memory for two system calls. Both return what libsystemd's do,
// for the cases a service meets: 0 outside systemd, 1 when sent or enabled, a negative errno.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

int sd_notify(int unset_environment, const char *state) {
    const char *path = getenv("NOTIFY_SOCKET");
    int result = 0;
    if (path == NULL || path[0] == '\0') goto finish;
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    size_t length = strlen(path);
    if (state == NULL) {
        result = -EINVAL;
    } else if ((path[0] != '/' && path[0] != '@') || length >= sizeof address.sun_path) {
        result = -EAFNOSUPPORT;  // systemd 253's vsock: addresses are for virtual machines
    } else {
        memcpy(address.sun_path, path, length);
        if (path[0] == '@') address.sun_path[0] = '\0';
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            result = -errno;
        } else {
            // The abstract name is exactly `length` bytes; a path's terminating NUL is optional.
            socklen_t size = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + length);
            ssize_t sent;
            do {
                sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&address, size);
            } while (sent < 0 && errno == EINTR);
            result = sent < 0 ? -errno : 1;
            close(fd);
        }
    }
finish:
    if (unset_environment) unsetenv("NOTIFY_SOCKET");
    return result;
}

/// `text` as a positive decimal number no larger than `maximum`, or 0.
static unsigned long long positive(const char *text, unsigned long long maximum) {
    if (text == NULL || text[0] < '0' || text[0] > '9') return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    return errno == 0 && end != NULL && *end == '\0' && value <= maximum ? value : 0;
}

int sd_watchdog_enabled(int unset_environment, uint64_t *usec) {
    const char *period = getenv("WATCHDOG_USEC");
    const char *pid = getenv("WATCHDOG_PID");
    int result = 0;
    if (period == NULL) goto finish;
    unsigned long long microseconds = positive(period, UINT64_MAX - 1);
    if (microseconds == 0) {
        result = -EINVAL;
        goto finish;
    }
    if (pid != NULL) {
        unsigned long long owner = positive(pid, INT32_MAX);
        if (owner == 0) {
            result = -EINVAL;
            goto finish;
        }
        if ((pid_t)owner != getpid()) goto finish;  // meant for another process of the service
    }
    if (usec != NULL) *usec = microseconds;
    result = 1;
finish:
    if (unset_environment) {
        unsetenv("WATCHDOG_USEC");
        unsetenv("WATCHDOG_PID");
    }
    return result;
}
