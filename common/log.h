/* Logging: the only mutable global state in the library.  Library code never
 * writes to stdout (in stdio mode it carries JSON-RPC); messages go to the
 * handler, which defaults to stderr. */
#ifndef NSBOX_LOG_H
#define NSBOX_LOG_H

enum nsbox_log_level {
    NSBOX_LOG_ERROR,
    NSBOX_LOG_WARN,
    NSBOX_LOG_INFO,
    NSBOX_LOG_DEBUG,
};

typedef void (*nsbox_log_fn)(enum nsbox_log_level level, const char *msg, void *ctx);

void nsbox_log_set_level(enum nsbox_log_level level);
enum nsbox_log_level nsbox_log_get_level(void);
/* Replaces the handler (NULL restores the stderr handler). */
void nsbox_log_set_handler(nsbox_log_fn fn, void *ctx);

void nsbox_log(enum nsbox_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define nsbox_warn(...) nsbox_log(NSBOX_LOG_WARN, __VA_ARGS__)
#define nsbox_info(...) nsbox_log(NSBOX_LOG_INFO, __VA_ARGS__)
#define nsbox_debug(...) nsbox_log(NSBOX_LOG_DEBUG, __VA_ARGS__)

#endif
