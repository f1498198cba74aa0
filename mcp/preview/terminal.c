/* Terminals (see terminal.h): the table, and each terminal's thread: it
 * waits for its WebSocket, then relays between the socket and the pty's
 * master through the frame codec (ws.h). */
#include "terminal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "../../boxes/proc.h"
#include "../../common/clock.h"
#include "../../common/log.h"
#include "ws.h"

#define IN_MAX (MCP_TERMINAL_FRAME_MAX + WS_HEADER_MAX)
#define OUT_MAX (64u << 10)
#define READ_MAX (16u << 10) /* pty bytes per frame out */
#define CLAIM_MS 10000       /* a claim not followed by its socket within this is dropped */
#define HANGUP_MS 1000       /* after the hangup, how long the shell has to pass it on */
#define DRAIN_MS 200         /* after the shell exits, what it wrote is sent until quiet so long */

enum state { PENDING, CLAIMED, ATTACHED, DONE };

struct mcp_terminal {
    struct mcp_terminals *tab;
    uint64_t id;
    uint32_t expires;
    const void *owner, *sandbox;
    struct nsbox_proc proc;
    int wake; /* eventfd: attached, or stop */
    pthread_t thread;
    /* Under tab->lock. */
    enum state state;
    bool stop;
    bool finished; /* its thread is about to return: joining it will not wait */
    int64_t claimed_ms;
    int sock;
    void (*close_sock)(void *);
    void *close_cls;
    uint8_t *extra;
    size_t n_extra;
    struct mcp_terminal *next;
};

struct mcp_terminals {
    pthread_mutex_t lock;
    pthread_mutex_t open_lock; /* one open at a time: the cap's count and the insert */
    uint8_t key[PREVIEW_KEY_LEN];
    unsigned ttl_s, max_per_owner;
    bool stopped;
    struct mcp_terminal *list;
};

/* ---- the relay ---- */

struct relay {
    struct mcp_terminal *term;
    int sock, pty;
    uint8_t *in;
    size_t in_len, in_off; /* bytes read; of them, parsed */
    const uint8_t *pw;     /* payload still to write into the pty */
    size_t pw_len;
    uint8_t out[OUT_MAX];
    size_t out_len, out_off;
    struct ws_seq seq;
    bool peer_gone, closing, pty_eof;
    int64_t quiet_since_ms;
};

static size_t out_room(const struct relay *r)
{
    return OUT_MAX - r->out_len;
}

static void out_compact(struct relay *r)
{
    if (r->out_off == r->out_len)
        r->out_off = r->out_len = 0;
    else if (r->out_off > 0 && out_room(r) < READ_MAX + WS_HEADER_MAX) {
        memmove(r->out, r->out + r->out_off, r->out_len - r->out_off);
        r->out_len -= r->out_off;
        r->out_off = 0;
    }
}

static void queue_frame(struct relay *r, uint8_t op, const uint8_t *p, size_t n)
{
    r->out_len += ws_header(r->out + r->out_len, op, n);
    memcpy(r->out + r->out_len, p, n);
    r->out_len += n;
}

/* Our close frame, once; nothing is read after it. */
static void queue_close(struct relay *r, uint16_t code)
{
    if (r->closing)
        return;
    r->closing = true;
    if (out_room(r) >= 4)
        r->out_len += ws_close_frame(r->out + r->out_len, code);
}

static void write_pty(struct relay *r)
{
    while (r->pw_len > 0) {
        ssize_t n = write(r->pty, r->pw, r->pw_len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* the pty is gone: the shell ended */
            r->pw_len = 0;
            return;
        }
        r->pw += n;
        r->pw_len -= (size_t)n;
    }
}

/* One data frame: a text message that is exactly a resize resizes, the
 * rest is input. */
static void on_data(struct relay *r, const struct ws_frame *f)
{
    unsigned cols, rows;
    if (f->message == WS_TEXT && f->opcode == WS_TEXT && f->fin &&
        ws_resize_parse((const char *)f->payload, f->len, &cols, &rows)) {
        struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
        ioctl(r->pty, TIOCSWINSZ, &ws); /* the kernel sends the shell SIGWINCH */
        return;
    }
    r->pw = f->payload;
    r->pw_len = f->len;
    write_pty(r);
}

/* Parses what came, frame by frame, while the pty takes input and a pong
 * or a close would fit. */
static void parse_input(struct relay *r)
{
    while (!r->closing && r->pw_len == 0 && out_room(r) >= WS_CONTROL_MAX + WS_HEADER_MAX) {
        struct ws_frame f;
        uint16_t code;
        long n = ws_frame_parse(r->in + r->in_off, r->in_len - r->in_off, MCP_TERMINAL_FRAME_MAX,
                                &f, &code);
        if (n == 0)
            break;
        if (n < 0 || ws_sequence(&r->seq, &f, MCP_TERMINAL_FRAME_MAX, &code) < 0) {
            queue_close(r, code);
            return;
        }
        r->in_off += (size_t)n;
        if (f.opcode == WS_PING) {
            queue_frame(r, WS_PONG, f.payload, f.len);
        } else if (f.opcode == WS_CLOSE) {
            uint16_t c;
            /* Echo its code (RFC 6455 5.5.1); a malformed close is 1002. */
            queue_close(r, ws_close_payload(f.payload, f.len, &c) < 0 ? WS_CLOSE_PROTOCOL
                           : c == 1005                                ? WS_CLOSE_NORMAL
                                                                      : c);
        } else if (f.opcode != WS_PONG) {
            on_data(r, &f);
        }
    }
    if (r->pw_len == 0 && r->in_off == r->in_len)
        r->in_off = r->in_len = 0;
}

static void read_sock(struct relay *r)
{
    if (r->pw_len == 0 && r->in_off > 0) {
        memmove(r->in, r->in + r->in_off, r->in_len - r->in_off);
        r->in_len -= r->in_off;
        r->in_off = 0;
    }
    if (r->in_len == IN_MAX)
        return;
    ssize_t n = recv(r->sock, r->in + r->in_len, IN_MAX - r->in_len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        r->peer_gone = true;
        return;
    }
    r->in_len += (size_t)n;
}

static void read_pty(struct relay *r)
{
    uint8_t tmp[READ_MAX];
    ssize_t n = read(r->pty, tmp, sizeof(tmp));
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) { /* EIO: no process holds the slave any more */
        r->pty_eof = true;
        return;
    }
    r->quiet_since_ms = nsbox_now_ms();
    queue_frame(r, WS_BINARY, tmp, (size_t)n);
}

static void write_sock(struct relay *r)
{
    ssize_t n = send(r->sock, r->out + r->out_off, r->out_len - r->out_off, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        r->peer_gone = true;
        return;
    }
    r->out_off += (size_t)n;
    out_compact(r);
}

static bool stop_asked(struct mcp_terminal *term)
{
    uint64_t v;
    if (read(term->wake, &v, sizeof(v)) < 0 && errno != EAGAIN)
        return true;
    pthread_mutex_lock(&term->tab->lock);
    bool stop = term->stop;
    pthread_mutex_unlock(&term->tab->lock);
    return stop;
}

/* Until the socket closes, the shell ends (and its output is sent), or a
 * stop. */
static void relay(struct mcp_terminal *term)
{
    struct relay *r = calloc(1, sizeof(*r));
    struct nsbox_err err;

    if (r == NULL || (r->in = malloc(IN_MAX)) == NULL) {
        free(r);
        return;
    }
    r->term = term;
    r->sock = term->sock;
    r->pty = term->proc.pty;
    r->quiet_since_ms = nsbox_now_ms();
    fcntl(r->sock, F_SETFL, fcntl(r->sock, F_GETFL) | O_NONBLOCK);
    r->in_len = term->n_extra < IN_MAX ? term->n_extra : IN_MAX;
    if (r->in_len > 0)
        memcpy(r->in, term->extra, r->in_len);
    parse_input(r);
    while (!r->peer_gone) {
        bool flushing = r->out_off < r->out_len;
        if (r->closing && !flushing)
            break;
        bool exited = term->proc.exited;
        if (exited && !flushing && (r->pty_eof || nsbox_now_ms() - r->quiet_since_ms >= DRAIN_MS)) {
            queue_close(r, WS_CLOSE_NORMAL);
            continue;
        }
        bool room = out_room(r) >= READ_MAX + WS_HEADER_MAX;
        struct pollfd p[4] = {
            {.fd = term->wake, .events = POLLIN},
            {.fd = exited ? -1 : term->proc.ctl, .events = POLLIN},
            {.fd = r->pty_eof || r->closing || !(room || r->pw_len) ? -1 : r->pty,
             .events = (short)((room ? POLLIN : 0) | (r->pw_len ? POLLOUT : 0))},
            {.fd = r->sock,
             .events = (short)((!r->closing && r->pw_len == 0 && r->in_len < IN_MAX ? POLLIN : 0) |
                               (flushing ? POLLOUT : 0))},
        };
        int n = poll(p, 4, exited ? DRAIN_MS : -1);
        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        if (p[0].revents && stop_asked(term)) {
            queue_close(r, WS_CLOSE_GOING_AWAY);
            write_sock(r);
            break;
        }
        if (p[1].revents && box_proc_wait(&term->proc, 0, &err) < 0)
            term->proc.exited = true; /* the sandbox is gone */
        if (p[1].revents && term->proc.exited)
            r->quiet_since_ms = nsbox_now_ms();
        if (p[2].revents & POLLOUT)
            write_pty(r);
        if ((p[2].revents & (POLLIN | POLLHUP | POLLERR)) && room)
            read_pty(r);
        if (p[3].revents & (POLLIN | POLLHUP | POLLERR))
            read_sock(r);
        if (p[3].revents & POLLOUT)
            write_sock(r);
        parse_input(r);
        if (r->out_off < r->out_len)
            write_sock(r);
    }
    free(r->in);
    free(r);
}

/* ---- a terminal's thread ---- */

static void *terminal_thread(void *arg)
{
    struct mcp_terminal *term = arg;
    struct mcp_terminals *tab = term->tab;
    struct nsbox_err err;

    /* Waiting for its socket: until the token expires, a claim is not
     * followed by its socket, or a stop.  A shell (a command) that ends
     * meanwhile leaves its output in the pty for the client to read. */
    for (;;) {
        pthread_mutex_lock(&tab->lock);
        enum state st = term->state;
        bool stop = term->stop;
        int64_t claimed = term->claimed_ms;
        if (!stop && st == PENDING && (uint32_t)time(NULL) > term->expires)
            term->state = st = DONE; /* a claim now fails: the record says done */
        pthread_mutex_unlock(&tab->lock);
        if (stop || st == DONE || st == ATTACHED)
            break;
        if (st == CLAIMED && nsbox_now_ms() - claimed > CLAIM_MS)
            break;
        struct pollfd p[2] = {{.fd = term->wake, .events = POLLIN},
                              {.fd = term->proc.exited ? -1 : term->proc.ctl, .events = POLLIN}};
        if (poll(p, 2, 1000) > 0) {
            uint64_t v;
            if (p[0].revents)
                (void)!read(term->wake, &v, sizeof(v));
            if (p[1].revents && box_proc_wait(&term->proc, 0, &err) < 0)
                term->proc.exited = true;
        }
    }
    pthread_mutex_lock(&tab->lock);
    bool attached = term->state == ATTACHED && !term->stop;
    pthread_mutex_unlock(&tab->lock);
    if (attached)
        relay(term);
    /* Done from here on: no claim, and no longer counted in its
     * session's terminals. */
    pthread_mutex_lock(&tab->lock);
    bool had_sock = term->state == ATTACHED;
    term->state = DONE;
    pthread_mutex_unlock(&tab->lock);
    /* The pty's master closed first: the kernel hangs the terminal up
     * and the shell gets SIGHUP, which an interactive bash passes on to
     * its jobs (each in a process group of its own); then the shell's
     * group is killed, whatever is left of it. */
    if (term->proc.pty >= 0 && !term->proc.exited) {
        close(term->proc.pty);
        term->proc.pty = -1;
        box_proc_wait(&term->proc, HANGUP_MS, &err);
    }
    box_proc_close(&term->proc);
    if (had_sock) {
        shutdown(term->sock, SHUT_RDWR);
        term->close_sock(term->close_cls);
    }
    pthread_mutex_lock(&tab->lock);
    term->finished = true;
    pthread_mutex_unlock(&tab->lock);
    return NULL;
}

/* ---- the table ---- */

struct mcp_terminals *mcp_terminals_new(unsigned ttl_s, unsigned max_per_owner,
                                        struct nsbox_err *err)
{
    struct mcp_terminals *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        nsbox_err_set(err, ENOMEM, "out of memory");
        return NULL;
    }
    if (getrandom(t->key, sizeof(t->key), 0) != (ssize_t)sizeof(t->key)) {
        nsbox_err_sys(err, "getrandom (the terminal URLs' key)");
        free(t);
        return NULL;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_mutex_init(&t->open_lock, NULL);
    t->ttl_s = ttl_s;
    t->max_per_owner = max_per_owner ? max_per_owner : MCP_TERMINALS_DEFAULT;
    return t;
}

static void wake(struct mcp_terminal *term)
{
    uint64_t one = 1;
    (void)!write(term->wake, &one, sizeof(one));
}

static void reap(struct mcp_terminal *term)
{
    pthread_join(term->thread, NULL);
    close(term->wake);
    free(term->extra);
    free(term);
}

/* Takes out of the list the terminals that match (sandbox, or every one
 * when all) or whose thread has finished, asks them to stop, and joins
 * them. */
static void collect(struct mcp_terminals *t, const void *sandbox, bool all)
{
    struct mcp_terminal *gone = NULL;
    pthread_mutex_lock(&t->lock);
    for (struct mcp_terminal **p = &t->list; *p != NULL;) {
        struct mcp_terminal *term = *p;
        if (all || term->finished || (sandbox != NULL && term->sandbox == sandbox)) {
            *p = term->next;
            term->stop = true;
            wake(term);
            term->next = gone;
            gone = term;
        } else {
            p = &term->next;
        }
    }
    pthread_mutex_unlock(&t->lock);
    while (gone != NULL) {
        struct mcp_terminal *next = gone->next;
        reap(gone);
        gone = next;
    }
}

void mcp_terminals_stop(struct mcp_terminals *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->lock);
    t->stopped = true;
    pthread_mutex_unlock(&t->lock);
    collect(t, NULL, true);
}

void mcp_terminals_free(struct mcp_terminals *t)
{
    if (t == NULL)
        return;
    mcp_terminals_stop(t);
    explicit_bzero(t->key, sizeof(t->key));
    pthread_mutex_destroy(&t->lock);
    pthread_mutex_destroy(&t->open_lock);
    free(t);
}

void mcp_terminals_close_sandbox(struct mcp_terminals *t, const void *sandbox)
{
    if (t != NULL)
        collect(t, sandbox, false);
}

size_t mcp_terminals_of_sandbox(struct mcp_terminals *t, const void *sandbox)
{
    size_t n = 0;
    if (t == NULL)
        return 0;
    pthread_mutex_lock(&t->lock);
    for (struct mcp_terminal *term = t->list; term != NULL; term = term->next)
        n += term->sandbox == sandbox && term->state != DONE;
    pthread_mutex_unlock(&t->lock);
    return n;
}

size_t mcp_terminals_count(struct mcp_terminals *t, const void *owner)
{
    size_t n = 0;
    pthread_mutex_lock(&t->lock);
    for (struct mcp_terminal *term = t->list; term != NULL; term = term->next)
        n += term->owner == owner && term->state != DONE;
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* The shell: command under sh -c, else bash when there is one, else sh
 * (-l neither: the sandbox's env is already the image's). */
static const char *shell_script =
    "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi";

/* eo's env with TERM=xterm-256color unless it has a TERM (borrowed strings). */
static char **with_term(char *const *env)
{
    size_t n = 0;
    bool has = false;
    for (; env != NULL && env[n] != NULL; n++)
        has = has || strncmp(env[n], "TERM=", 5) == 0;
    char **v = calloc(n + 2, sizeof(char *));
    if (v == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        v[i] = env[i];
    if (!has)
        v[n] = "TERM=xterm-256color";
    return v;
}

static int open_locked(struct mcp_terminals *t, const void *owner, const void *sandbox,
                       struct box *box, const struct nsbox_exec_opts *eo, unsigned cols,
                       unsigned rows, const char *command, char token[PREVIEW_TOKEN_LEN + 1],
                       uint32_t *expires, struct nsbox_err *err)
{
    collect(t, NULL, false); /* the ended ones */
    pthread_mutex_lock(&t->lock);
    bool stopped = t->stopped;
    pthread_mutex_unlock(&t->lock);
    if (stopped)
        return nsbox_err_set(err, ESHUTDOWN, "the server is stopping");
    if (mcp_terminals_count(t, owner) >= t->max_per_owner)
        return nsbox_err_set(err, EAGAIN,
                             "this session has %u terminals open, the most it may have "
                             "(serve --max-terminals); close one (its WebSocket) first",
                             t->max_per_owner);
    struct mcp_terminal *term = calloc(1, sizeof(*term));
    if (term == NULL)
        return nsbox_err_set(err, ENOMEM, "out of memory");
    term->proc.ctl = term->proc.chan = term->proc.out = term->proc.err = term->proc.pty = -1;
    term->tab = t;
    term->owner = owner;
    term->sandbox = sandbox;
    term->sock = -1;
    term->expires = *expires = (uint32_t)time(NULL) + t->ttl_s;
    if (getrandom(&term->id, sizeof(term->id), 0) != sizeof(term->id) ||
        (term->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        free(term);
        return nsbox_err_sys(err, "cannot make a terminal");
    }
    char *argv[] = {"/bin/sh", "-c", (char *)(command ? command : shell_script), NULL};
    struct nsbox_exec_opts o = *eo;
    char **env = with_term(eo->env);
    o.argv = argv;
    o.env = env ? env : eo->env;
    o.tty = true;
    o.tty_cols = (unsigned short)cols;
    o.tty_rows = (unsigned short)rows;
    int r = box_proc_start(box, &o, &term->proc, err);
    free(env);
    if (r < 0) {
        close(term->wake);
        free(term);
        return -1;
    }
    preview_token_make(t->key, PREVIEW_TERMINAL, term->id, term->expires, token);
    if ((errno = pthread_create(&term->thread, NULL, terminal_thread, term)) != 0) {
        nsbox_err_sys(err, "cannot start a terminal's thread");
        box_proc_close(&term->proc);
        close(term->wake);
        free(term);
        return -1;
    }
    pthread_mutex_lock(&t->lock);
    term->next = t->list;
    t->list = term;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

int mcp_terminal_open(struct mcp_terminals *t, const void *owner, const void *sandbox,
                      struct box *box, const struct nsbox_exec_opts *eo, unsigned cols,
                      unsigned rows, const char *command, char token[PREVIEW_TOKEN_LEN + 1],
                      uint32_t *expires, struct nsbox_err *err)
{
    pthread_mutex_lock(&t->open_lock);
    int r = open_locked(t, owner, sandbox, box, eo, cols, rows, command, token, expires, err);
    pthread_mutex_unlock(&t->open_lock);
    return r;
}

struct mcp_terminal *mcp_terminal_claim(struct mcp_terminals *t, const char *token, size_t len,
                                        const char **why)
{
    uint64_t id;
    const char *how;

    if (preview_token_check(t->key, token, len, PREVIEW_TERMINAL, (uint32_t)time(NULL), &id, NULL,
                            &how) < 0) {
        nsbox_debug("terminal URL refused: %s", how);
        *why = "refused";
        return NULL;
    }
    pthread_mutex_lock(&t->lock);
    struct mcp_terminal *term = t->list;
    while (term != NULL && term->id != id)
        term = term->next;
    *why = term == NULL || term->state == DONE || term->stop ? "gone"
           : term->state != PENDING                          ? "used"
                                                             : NULL;
    if (*why == NULL) {
        term->state = CLAIMED;
        term->claimed_ms = nsbox_now_ms();
    }
    pthread_mutex_unlock(&t->lock);
    return *why == NULL ? term : NULL;
}

void mcp_terminal_attach(struct mcp_terminal *term, int sock, const char *extra, size_t n,
                         void (*close_sock)(void *cls), void *cls)
{
    struct mcp_terminals *t = term->tab;
    uint8_t *copy = n ? malloc(n) : NULL;

    pthread_mutex_lock(&t->lock);
    bool ok = term->state == CLAIMED && !term->stop && (n == 0 || copy != NULL);
    if (ok) {
        if (n)
            memcpy(copy, extra, n);
        term->extra = copy;
        term->n_extra = n;
        term->sock = sock;
        term->close_sock = close_sock;
        term->close_cls = cls;
        term->state = ATTACHED;
        wake(term);
    }
    pthread_mutex_unlock(&t->lock);
    if (!ok) {
        free(copy);
        close_sock(cls);
    }
}
