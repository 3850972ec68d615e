/*
 * bind_loopback: an LD_PRELOAD library that keeps a process's sockets on loopback.
 *
 * DynamoDB Local has no option for the address it listens on and binds the wildcard
 * address, so with its placeholder credentials anyone on the network could read and
 * rewrite its data. Loaded into its JVM (LD_PRELOAD, set by server/local_engine.py),
 * this replaces bind() and turns a wildcard address into loopback:
 *
 *   0.0.0.0                      -> 127.0.0.1
 *   :: on an IPv6-only socket     -> ::1
 *   :: on a dual-stack socket     -> ::ffff:127.0.0.1 (IPv4 loopback, which the engine's
 *                                    endpoint uses; ::1 would refuse IPv4 clients)
 *
 * Every other address is passed through unchanged. The JVM binds through libc (libnio,
 * libnet), so the preloaded symbol is the one it calls. The launcher still checks the
 * listening socket afterwards: if this library was not loaded, it refuses to go on.
 *
 * Built by scripts/setup (into .build/loopback): cc -shared -fPIC -O2 ... -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static bind_fn real_bind(void) {
    static bind_fn resolved;
    if (resolved == NULL) {
        resolved = (bind_fn)dlsym(RTLD_NEXT, "bind");
    }
    return resolved;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    bind_fn next = real_bind();
    if (next == NULL) {
        /* Without the real bind() nothing can be bound safely: fail the call. */
        errno = ENOSYS;
        return -1;
    }
    if (addr != NULL && addr->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        struct sockaddr_in in4;
        memcpy(&in4, addr, sizeof in4);
        if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return next(fd, (const struct sockaddr *)&in4, sizeof in4);
        }
    } else if (addr != NULL && addr->sa_family == AF_INET6
               && len >= sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, addr, sizeof in6);
        if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) {
            int v6only = 1;
            socklen_t size = sizeof v6only;
            /* When the option cannot be read, ::1 is the choice that stays on loopback. */
            if (getsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &size) != 0) {
                v6only = 1;
            }
            if (v6only) {
                in6.sin6_addr = in6addr_loopback;
            } else {
                static const unsigned char mapped[16] = {
                    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
                memcpy(&in6.sin6_addr, mapped, sizeof mapped);
            }
            return next(fd, (const struct sockaddr *)&in6, sizeof in6);
        }
    }
    return next(fd, addr, len);
}
