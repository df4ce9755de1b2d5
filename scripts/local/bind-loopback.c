/*
 * LD_PRELOAD shim for DynamoDB Local, which has no option for its listen address and binds every interface: a bind()
 * to the IPv4 wildcard address is made to 127.0.0.1 instead, so the local stack's database is reachable from this
 * machine only. Built and used by scripts/local/loopback.ts; the JVM runs with -Djava.net.preferIPv4Stack=true, so
 * its server socket is IPv4.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static int (*real_bind)(int, const struct sockaddr *, socklen_t);
  if (!real_bind) real_bind = (int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT, "bind");
  if (addr != NULL && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in loopback;
    memcpy(&loopback, addr, sizeof loopback);
    if (loopback.sin_addr.s_addr == htonl(INADDR_ANY)) {
      loopback.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind(fd, (const struct sockaddr *)&loopback, sizeof loopback);
    }
  }
  return real_bind(fd, addr, len);
}
