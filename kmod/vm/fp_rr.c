// SPDX-License-Identifier: GPL-2.0
/*
 * fp_rr - a small TCP request/response program for the VM tests.
 *
 *   fp_rr server PORT
 *   fp_rr client HOST PORT COUNT REQ_BYTES RESP_BYTES [new]
 *
 * The client sends COUNT requests of REQ_BYTES and reads a RESP_BYTES
 * response to each, on one connection (or a new connection per request with
 * "new": a short flow each, handshake included), checks every byte, and
 * prints one line:
 *   rr: count N ok N failed N p50_us X p90_us X p99_us X max_us X
 * Exit status 0 when every transaction completed and checked out.
 * The server answers any number of connections (one process each).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HDR 8	/* request header: u32 request bytes, u32 response bytes (network order) */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int io_all(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;

	while (len) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static unsigned char pattern(size_t i)
{
	return (unsigned char)(i * 131 + 7);
}

static void serve(int fd)
{
	static unsigned char buf[1 << 16];
	uint32_t hdr[2];

	while (io_all(fd, hdr, HDR, 0) == 0) {
		size_t req = ntohl(hdr[0]), resp = ntohl(hdr[1]), i;

		while (req) {
			size_t n = req < sizeof(buf) ? req : sizeof(buf);

			if (io_all(fd, buf, n, 0))
				return;
			req -= n;
		}
		for (i = 0; resp; ) {
			size_t n = resp < sizeof(buf) ? resp : sizeof(buf), k;

			for (k = 0; k < n; k++)
				buf[k] = pattern(i + k);
			if (io_all(fd, buf, n, 1))
				return;
			i += n;
			resp -= n;
		}
	}
}

static int server(const char *port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(port)) };
	int one = 1, zero = 0, fd = socket(AF_INET6, SOCK_STREAM, 0);

	signal(SIGCHLD, SIG_IGN);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
		perror("fp_rr server");
		return 2;
	}
	for (;;) {
		int c = accept(fd, NULL, NULL);

		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (fork() == 0) {
			close(fd);
			serve(c);
			_exit(0);
		}
		close(c);
	}
}

/* HOST is a numeric IPv4 or IPv6 address (the guests have no resolver). */
static int connect_to(const char *host, const char *port)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(atoi(port)) };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(atoi(port)) };
	struct sockaddr *sa = (struct sockaddr *)&a4;
	socklen_t len = sizeof(a4);
	int one = 1, fd;

	if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
		sa = (struct sockaddr *)&a6;
		len = sizeof(a6);
	} else if (inet_pton(AF_INET, host, &a4.sin_addr) != 1) {
		return -1;
	}
	fd = socket(sa->sa_family, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, sa, len)) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int client(const char *host, const char *port, long count, size_t req,
		  size_t resp, int fresh)
{
	uint64_t *lat = calloc(count, sizeof(*lat));
	unsigned char *buf = malloc(req > resp ? req + HDR : resp + HDR);
	long ok = 0, failed = 0, i;
	int fd = -1;

	if (!lat || !buf)
		return 2;
	for (i = 0; i < count; i++) {
		uint64_t t0 = now_us();
		uint32_t *hdr = (uint32_t *)buf;
		size_t k;
		int good = 1;

		if (fd < 0)
			fd = connect_to(host, port);
		if (fd < 0) {
			failed++;
			continue;
		}
		hdr[0] = htonl(req);
		hdr[1] = htonl(resp);
		memset(buf + HDR, 0x5a, req);
		if (io_all(fd, buf, HDR + req, 1) || io_all(fd, buf, resp, 0))
			good = 0;
		for (k = 0; good && k < resp; k++)
			good = buf[k] == pattern(k);
		if (good)
			lat[ok++] = now_us() - t0;
		else
			failed++;
		if (fresh || !good) {
			close(fd);
			fd = -1;
		}
	}
	qsort(lat, ok, sizeof(*lat), cmp_u64);
	printf("rr: count %ld ok %ld failed %ld p50_us %llu p90_us %llu p99_us %llu max_us %llu\n",
	       count, ok, failed,
	       (unsigned long long)(ok ? lat[ok / 2] : 0),
	       (unsigned long long)(ok ? lat[ok * 9 / 10] : 0),
	       (unsigned long long)(ok ? lat[ok * 99 / 100] : 0),
	       (unsigned long long)(ok ? lat[ok - 1] : 0));
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "server"))
		return server(argv[2]);
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], atol(argv[4]), strtoul(argv[5], NULL, 0),
			      strtoul(argv[6], NULL, 0), argc == 8 && !strcmp(argv[7], "new"));
	fprintf(stderr, "usage: fp_rr server PORT\n"
			"       fp_rr client HOST PORT COUNT REQ_BYTES RESP_BYTES [new]\n");
	return 2;
}
