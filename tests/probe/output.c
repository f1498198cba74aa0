/*
 * output.c: the probe's output.  A growable buffer, a JSON string writer that
 * keeps every line valid UTF-8 whatever bytes it is handed, and the check
 * result (struct res): its recorders (sysret, infret, det, x_*), the verdict
 * classes and emit(), which writes one JSON line to stdout.
 */

#include "probe.h"

/* ------------------------------------------------------------------ */
/* Growable buffer and JSON writer                                     */
/* ------------------------------------------------------------------ */

void b_reserve(struct buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + n + 1)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		static const char msg[] = "probe: out of memory\n";
		(void)!write(2, msg, sizeof msg - 1);
		_exit(3);
	}
	b->p = p;
	b->cap = cap;
}

static void b_putn(struct buf *b, const char *s, size_t n)
{
	b_reserve(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void b_puts(struct buf *b, const char *s) { b_putn(b, s, strlen(s)); }

__attribute__((format(printf, 2, 3)))
void b_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	b_reserve(b, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at s, or 0 if it is not one
 * (overlong forms, surrogates and values past U+10FFFF are rejected), so
 * that whatever bytes the sandbox hands us, the line stays valid JSON. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0) {
		len = 2; cp = c & 0x1f; min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3; cp = c & 0x0f; min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4; cp = c & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/* Quoted, escaped JSON string.  Bytes that are not valid UTF-8 become
 * \u00XX (their Latin-1 reading): lossy, but never invalid output. */
void b_jstrn(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	b_putn(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = u[i];
		const char *esc = NULL;
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		}
		if (esc) {
			b_puts(b, esc);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			b_printf(b, "\\u%04x", c);
			i++;
		} else {
			size_t l = utf8_seq(u + i, n - i);
			if (l) {
				b_putn(b, s + i, l);
				i += l;
			} else {
				b_printf(b, "\\u%04x", c);
				i++;
			}
		}
	}
	b_putn(b, "\"", 1);
}

void b_jstr(struct buf *b, const char *s)
{
	if (s)
		b_jstrn(b, s, strlen(s));
	else
		b_puts(b, "null");
}

const char *errname(int e)
{
	if (e == 0)
		return "";
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

const char *signame(int sig, char *tmp, size_t n)
{
	const char *a = sigabbrev_np(sig);
	if (a)
		snprintf(tmp, n, "SIG%s", a);
	else
		snprintf(tmp, n, "SIG%d", sig);
	return tmp;
}

int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Check results                                                       */
/* ------------------------------------------------------------------ */

__attribute__((format(printf, 2, 3)))
void det(struct res *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof r->detail, fmt, ap);
	va_end(ap);
}

void x_key(struct res *r, const char *k)
{
	b_puts(&r->x, ",");
	b_jstr(&r->x, k);
	b_puts(&r->x, ":");
}

void x_int(struct res *r, const char *k, long long v)
{
	x_key(r, k);
	b_printf(&r->x, "%lld", v);
}

void x_hex(struct res *r, const char *k, unsigned long long v)
{
	x_key(r, k);
	b_printf(&r->x, "\"0x%llx\"", v);
}

void x_str(struct res *r, const char *k, const char *v)
{
	x_key(r, k);
	b_jstr(&r->x, v);
}

void x_bool(struct res *r, const char *k, int v)
{
	x_key(r, k);
	b_puts(&r->x, v ? "true" : "false");
}

/* {"ret":R,"errno":E,"errname":"..."} for a secondary call. */
static void b_sysobj(struct buf *b, long ret, int err)
{
	b_printf(b, "{\"ret\":%ld,\"errno\":%d,\"errname\":", ret, ret < 0 ? err : 0);
	b_jstr(b, errname(ret < 0 ? err : 0));
	b_puts(b, "}");
}

void x_sys(struct res *r, const char *k, long ret, int err)
{
	x_key(r, k);
	b_sysobj(&r->x, ret, err);
}

/* JSON array of the lines of text (a final newline ends the last line). */
void b_lines(struct buf *b, const char *text, size_t n)
{
	b_puts(b, "[");
	size_t start = 0, count = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n && start == n)
			break;
		if (i == n || text[i] == '\n') {
			if (count++)
				b_puts(b, ",");
			b_jstrn(b, text + start, i - start);
			start = i + 1;
		}
	}
	b_puts(b, "]");
}

const char *classify(long ret, int err)
{
	if (ret >= 0)
		return "succeeded";
	if (err == EPERM || err == ENOSYS || err == EACCES)
		return "blocked";
	return "reached";
}

const char *classify_write_open(long ret, int err)
{
	if (ret >= 0)
		return "succeeded";
	if (err == EROFS || err == EPERM || err == EACCES || err == ENOSYS)
		return "blocked";
	if (err == ENOENT)
		return "absent";
	return "reached";
}

/* Records a syscall result; must be called right after the call so errno is
 * still the call's. */
void sysret(struct res *r, long ret)
{
	int e = errno;
	r->ret = ret;
	r->err = ret < 0 ? e : 0;
	r->verdict = classify(ret, r->err);
}

/* Records a plain (non-verdict) result. */
void infret(struct res *r, long ret, int err)
{
	r->ret = ret;
	r->err = ret < 0 ? err : 0;
	r->verdict = NULL;
}

void emit(const char *check, struct res *r)
{
	struct buf b = {0};
	b_puts(&b, "{\"check\":");
	b_jstr(&b, check);
	b_printf(&b, ",\"ret\":%ld,\"errno\":%d,\"errname\":", r->ret, r->err);
	b_jstr(&b, errname(r->err));
	b_puts(&b, ",\"detail\":");
	b_jstr(&b, r->detail);
	if (r->verdict) {
		b_puts(&b, ",\"verdict\":");
		b_jstr(&b, r->verdict);
	}
	if (r->x.len)
		b_putn(&b, r->x.p, r->x.len);
	b_puts(&b, "}\n");
	(void)write_all(1, b.p, b.len);
	free(b.p);
}

void res_init(struct res *r)
{
	memset(r, 0, sizeof *r);
}
