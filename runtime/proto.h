/* Messages between the host side (nsbox) and a sandbox's init, over a
 * SOCK_SEQPACKET unix socket: one message per datagram, stdio fds of an
 * exec travel with it as SCM_RIGHTS.  Fixed-size headers, bounded strings:
 * init parses nothing it did not size-check first. */
#ifndef NSBOX_RUNTIME_PROTO_H
#define NSBOX_RUNTIME_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../common/err.h"

#define NSBOX_PROTO_MAX (128 * 1024)
#define NSBOX_PROTO_ERR_MAX 256

enum nsbox_msg_type {
    NSBOX_MSG_EXEC = 1,  /* host -> init: run a command (3 fds attached) */
    NSBOX_MSG_STARTED,   /* no longer sent; ignored from older inits */
    NSBOX_MSG_EXITED,    /* init -> host: its wait status and usage */
    NSBOX_MSG_KILL,      /* host -> init: kill one exec's group, or all */
    NSBOX_MSG_ERROR,     /* init -> host: the exec could not start */
    NSBOX_MSG_DISK,      /* init -> host, first on every connection when the
                           sandbox has a tmpfs disk: its root (1 fd) */
    NSBOX_MSG_ATTACH,    /* host -> init: one end of a new connection (1 fd) */
    NSBOX_MSG_SIGNAL,    /* host -> init: signal one exec's process group */
    NSBOX_MSG_PTY,       /* init -> host: a terminal exec's pty master (1 fd),
                           before its EXITED; a struct nsbox_msg_status */
    NSBOX_MSG_LISTEN,    /* host -> init: listeners for the egress broker
                           (struct nsbox_msg_listen) */
    NSBOX_MSG_LISTENER,  /* init -> host: one of them (1 fd), in order; a
                           struct nsbox_msg_listener.  After the last, or
                           instead of any on failure, an ERROR status
                           (err_code 0: done) */
    NSBOX_MSG_CONNECT,   /* host -> init: a TCP socket connected to the
                           sandbox's loopback (struct nsbox_msg_connect,
                           1 fd: a SOCK_SEQPACKET socket for the answer) */
    NSBOX_MSG_CONNECTED, /* init -> host, on that socket: the socket (1 fd,
                            connect begun or done), or an ERROR status */
    NSBOX_MSG_ADOPT,     /* host -> init: take on a child of init's that no
                            exec claims as an exec of this connection
                            (struct nsbox_msg_adopt: context_fork) */
    NSBOX_MSG_ADOPTED,   /* init -> host: it is (a struct nsbox_msg_status
                            with its pid), else an ERROR status */
};

/* A process the sandbox forked itself and init now parents (an
 * interpreter's fork, reparented to init by a double fork), taken on as
 * exec id of the connection that asks: its exit is reported, its group
 * signalled and killed with the connection, as a command's.  init checks
 * that pid is its own child and claimed by no exec. */
struct nsbox_msg_adopt {
    uint32_t type;
    int32_t pid; /* in the sandbox's pid namespace */
    uint64_t id; /* chosen by the host, as an exec's */
};

/* Connect to 127.0.0.1:port (family 4) or [::1]:port (family 6) inside
 * the sandbox's network namespace, without blocking init: the socket
 * comes back with its connect in progress (the host waits for it). */
struct nsbox_msg_connect {
    uint32_t type;
    uint32_t family; /* 4 or 6 */
    uint32_t port;   /* 1..65535 */
    uint32_t pad;
};

#define NSBOX_LISTEN_MAX_PORTS 64

/* TCP [::]:port (IPV6_V6ONLY off: v4 too) for each port, then, with dns,
 * UDP and TCP 127.0.0.1:53. */
struct nsbox_msg_listen {
    uint32_t type;
    uint32_t n_ports; /* <= NSBOX_LISTEN_MAX_PORTS */
    uint32_t dns;     /* 1: the two DNS sockets after the ports */
    uint32_t pad;
    uint16_t ports[NSBOX_LISTEN_MAX_PORTS];
};

struct nsbox_msg_listener {
    uint32_t type;
    uint32_t index; /* its place in the request's order */
};

/* An exec with a terminal: its message (type EXEC, no fds) carries this
 * after the strings, so len = sizeof(nsbox_msg_exec) + strings_len +
 * sizeof(nsbox_msg_tty), unaligned (copy it out).  An init older than the
 * field refuses such a request as malformed instead of misreading it. */
struct nsbox_msg_tty {
    uint16_t rows, cols; /* the terminal's first size */
    uint32_t flags;      /* 0 */
};

struct nsbox_msg_attach {
    uint32_t type;
    uint32_t pad;
};

struct nsbox_msg_signal {
    uint32_t type;
    int32_t sig; /* SIGINT, SIGTERM or SIGKILL; anything else is ignored */
    uint64_t id; /* an exec of the same connection */
};

struct nsbox_msg_disk {
    uint32_t type;
    uint32_t pad;
};

struct nsbox_msg_exec {
    uint32_t type;
    uint32_t n_args;                                    /* >= 1 */
    uint64_t id;                                        /* chosen by the host, echoed back */
    uint32_t uid, gid;                                  /* ids inside the sandbox */
    uint64_t rlimit_nofile, rlimit_fsize, rlimit_nproc; /* 0: keep */
    uint32_t n_env;
    uint32_t strings_len; /* argv, then env, then cwd: NUL-terminated each */
    char strings[];
};

struct nsbox_msg_status {
    uint32_t type; /* EXITED or ERROR */
    int32_t pid;
    uint64_t id;
    int32_t wait_status; /* EXITED: as from waitpid() */
    int32_t err_code;    /* ERROR */
    uint64_t utime_us, stime_us, maxrss_kb;
    char err[NSBOX_PROTO_ERR_MAX];
};

struct nsbox_msg_kill {
    uint32_t type;
    uint32_t pad;
    uint64_t id; /* 0: every process in the sandbox but init */
};

/* Sends len bytes as one message with up to NSBOX_PROTO_SEND_FDS fds (init's
 * messages carry at most 3; the egress broker's control, listeners).
 * Returns 0 or -1. */
#define NSBOX_PROTO_SEND_FDS 72
int nsbox_proto_send(int sock, const void *msg, size_t len, const int *fds, size_t n_fds,
                     struct nsbox_err *err);

/* Receives one message into buf (size bytes) and up to 3 fds into fds
 * (the rest set to -1).  Returns the length, 0 on orderly shutdown, -1 on
 * error (truncated messages are errors, and their fds are closed). */
ssize_t nsbox_proto_recv(int sock, void *buf, size_t size, int fds[3], struct nsbox_err *err);

#endif
