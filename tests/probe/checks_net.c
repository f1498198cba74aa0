/*
 * checks_net.c: network checks: interfaces and lo, TCP egress (1 s timeout)
 * and a connect to an abstract unix socket a test may have planted on the
 * host (1 s read timeout).
 */

#include "probe.h"

/* ------------------------------------------------------------------ */
/* Network                                                             */
/* ------------------------------------------------------------------ */

static int if_flags(const char *name, int *flags)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", name);
	int ret = ioctl(s, SIOCGIFFLAGS, &ifr);
	int e = errno;
	close(s);
	errno = e;
	if (ret == 0)
		*flags = ifr.ifr_flags;
	return ret;
}

void c_netdevs(struct res *r)
{
	char *text;
	ssize_t n = slurp("/proc/net/dev", &text, 1 << 20);
	if (n < 0) {
		infret(r, -1, errno);
		det(r, "/proc/net/dev");
		return;
	}
	long count = 0;
	x_key(r, "ifaces");
	b_puts(&r->x, "[");
	int lineno = 0;
	for (char *line = text; line && *line; lineno++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *colon = strchr(line, ':');
		if (lineno >= 2 && colon) {
			*colon = '\0';
			while (*line == ' ')
				line++;
			int fl = 0;
			int ok = if_flags(line, &fl) == 0;
			b_printf(&r->x, "%s{\"name\":", count ? "," : "");
			b_jstr(&r->x, line);
			if (ok)
				b_printf(&r->x, ",\"flags\":\"0x%x\",\"up\":%s", fl, fl & IFF_UP ? "true" : "false");
			b_puts(&r->x, "}");
			count++;
		}
		line = nl ? nl + 1 : NULL;
	}
	b_puts(&r->x, "]");
	free(text);
	infret(r, count, 0);
	det(r, "interfaces from /proc/net/dev (ret = count)");
}

void c_lo_up(struct res *r)
{
	int fl = 0;
	if (if_flags("lo", &fl) < 0) {
		infret(r, -1, errno);
		det(r, "SIOCGIFFLAGS lo");
		return;
	}
	infret(r, (fl & IFF_UP) ? 1 : 0, 0);
	x_hex(r, "flags", (unsigned)fl);
	x_bool(r, "running", fl & IFF_RUNNING);
	det(r, "ret 1 = lo is UP");
}

void c_net_egress(struct res *r)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s < 0) {
		infret(r, -1, errno);
		det(r, "socket(AF_INET) failed");
		return;
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "1.1.1.1", &a.sin_addr);
	int ret = connect(s, (struct sockaddr *)&a, sizeof a);
	int e = errno;
	if (ret < 0 && e == EINPROGRESS) {
		struct pollfd p = {.fd = s, .events = POLLOUT};
		int pr = poll(&p, 1, 1000);
		if (pr == 0) {
			e = ETIMEDOUT;
		} else {
			socklen_t l = sizeof e;
			getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l);
			ret = e ? -1 : 0;
		}
	}
	close(s);
	infret(r, ret < 0 ? -1 : 0, e);
	det(r, "TCP connect 1.1.1.1:53, 1 s timeout (ETIMEDOUT = no answer in time)");
}

void c_abstract_socket(struct res *r)
{
	static const char name[] = "nsbox-probe-canary";
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		infret(r, -1, errno);
		return;
	}
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	memcpy(a.sun_path + 1, name, sizeof name - 1);   /* sun_path[0] = '\0': abstract */
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + sizeof name - 1);
	int ret = connect(s, (struct sockaddr *)&a, len);
	infret(r, ret, errno);
	det(r, "connect(@%s): ECONNREFUSED = nothing listening in this netns", name);
	if (ret == 0) {
		/* A test's host-side listener may send a token: bring it back. */
		struct timeval tv = {.tv_sec = 1};
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		char buf[128];
		ssize_t n = read(s, buf, sizeof buf);
		x_key(r, "received");
		if (n > 0)
			b_jstrn(&r->x, buf, (size_t)n);
		else
			b_puts(&r->x, "null");
	}
	close(s);
}
