// The kernel's share of a busy-polled UDP ping-pong, in C (jrdma-bench/README.md, "Two namespaces: 64 B latency
// (helper lat18)"): a connected socket's send against sendto with the address, and recv against recvmsg / recvmmsg
// with control messages (the soft device's receive). Run by udp-pingpong.sh between two namespaces.
//   udp-pingpong server|client LOCAL_IP PEER_IP PORT CONNECTED MODE [N]
// MODE bits: 1 recvmmsg (else recv), 16 recvmsg (without 1), 32 recvmmsg asks for one message (else 8),
//            2 IP_RECVTOS, 4 UDP_GRO, 8 IP_TOS ECT(0) on the socket (the soft device sets all three: 14)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static long now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000L + t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc < 7) return 2;
  int client = !strcmp(argv[1], "client"), port = atoi(argv[4]), conn = atoi(argv[5]), mode = atoi(argv[6]);
  int n = argc > 7 ? atoi(argv[7]) : 100000, warm = 2000, one = 1, ect0 = 2;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (mode & 8) setsockopt(fd, IPPROTO_IP, IP_TOS, &ect0, 4);
  if (mode & 2) setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, 4);
  if (mode & 4) setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, 4);
  struct sockaddr_in la = {0}, pa = {0};
  la.sin_family = pa.sin_family = AF_INET;
  la.sin_port = pa.sin_port = htons(port);
  inet_pton(AF_INET, argv[2], &la.sin_addr);
  inet_pton(AF_INET, argv[3], &pa.sin_addr);
  if (bind(fd, (void *)&la, sizeof la)) { perror("bind"); return 1; }
  if (conn && connect(fd, (void *)&pa, sizeof pa)) { perror("connect"); return 1; }
  static char buf[8][65536];
  char ctl[8][64], out[100];
  struct sockaddr_in from[8];
  struct iovec iov[8];
  struct mmsghdr h[8];
  for (int i = 0; i < 8; i++) {
    iov[i].iov_base = buf[i];
    iov[i].iov_len = sizeof buf[i];
    memset(&h[i], 0, sizeof h[i]);
    h[i].msg_hdr.msg_name = &from[i];
    h[i].msg_hdr.msg_iov = &iov[i];
    h[i].msg_hdr.msg_iovlen = 1;
    h[i].msg_hdr.msg_control = ctl[i];
  }
  memset(out, 7, sizeof out);
  long *t = malloc(sizeof(long) * n);
  for (int k = 0; k < n + warm; k++) {
    long t0 = now();
    if (client) conn ? send(fd, out, sizeof out, 0) : sendto(fd, out, sizeof out, 0, (void *)&pa, sizeof pa);
    for (;;) {
      int r;
      h[0].msg_hdr.msg_namelen = sizeof from[0];
      h[0].msg_hdr.msg_controllen = sizeof ctl[0];
      if (mode & 1) r = recvmmsg(fd, h, (mode & 32) ? 1 : 8, MSG_DONTWAIT, NULL);
      else if (mode & 16) r = recvmsg(fd, &h[0].msg_hdr, MSG_DONTWAIT);
      else r = recv(fd, buf[0], sizeof buf[0], MSG_DONTWAIT);
      if (r > 0) break;
    }
    if (!client) conn ? send(fd, out, sizeof out, 0) : sendto(fd, out, sizeof out, 0, (void *)&pa, sizeof pa);
    else if (k >= warm) t[k - warm] = now() - t0;
  }
  if (client) {
    qsort(t, n, sizeof(long), cmp);
    printf("connected %d mode %2d: half round trip p50 %.3f us, p10 %.3f us\n", conn, mode, t[n / 2] / 2000.0,
           t[n / 10] / 2000.0);
  }
  return 0;
}
