/* The file operations' wire, private to runtime/ (files.c is the client,
 * files_builtin.c the side in the sandbox); either may change with the
 * other.
 *
 * Request: an exec whose argv is NSBOX_FILE_OP_MARKER, the operation and
 * its arguments; a write's data on stdin.  Reply: data on stdout (a read's
 * bytes, a listing's records) and exactly one line on stderr:
 *     "nsbox-file ok VALUE"            VALUE: the file's size (read, write),
 *                                      1 for a truncated listing, else 0
 *     "nsbox-file err ERRNO WHY ARG"   WHY: enum files_why; ARG its number
 *                                      (a file type, a path prefix's length)
 * and the exit status 0 or the errno.  The builtin runs with the sandbox's
 * privileges, so the client treats all of it as hostile: sizes bounded,
 * every number range-checked, and messages rendered from the path the
 * client sent, never from text the sandbox wrote. */
#ifndef NSBOX_RUNTIME_FILES_WIRE_H
#define NSBOX_RUNTIME_FILES_WIRE_H

#include <stdbool.h>

#include "../common/utf8.h"
#include <stddef.h>

#include "files.h"

/* argv[0] of an exec that is a file operation run by init's child itself
 * (no program is executed).  Contains a byte no real path has. */
#define NSBOX_FILE_OP_MARKER "\x01nsbox-file"

#define FILES_REPLY_TAG "nsbox-file"
#define FILES_LIST_MAX 10000 /* entries in one listing */
#define FILES_DEPTH_MAX 64

/* Why an operation failed: the client's message for each. */
enum files_why {
    WHY_READ,              /* cannot read PATH: ERR */
    WHY_SEEK,              /* cannot seek in PATH: ERR */
    WHY_NOT_REGULAR,       /* PATH is a TYPE (ARG: enum nsbox_file_type), not a regular file */
    WHY_WRITE,             /* cannot write PATH: ERR */
    WHY_WRITE_NOT_REGULAR, /* not a regular file: PATH */
    WHY_LIST,              /* cannot list PATH: ERR */
    WHY_MKDIR,             /* cannot create directory PATH[0..ARG): ERR */
    WHY_NOT_DIR,           /* not a directory: PATH */
    WHY_DELETE,            /* cannot delete PATH: ERR */
    WHY_RMDIR,             /* cannot delete directory (not empty? pass recursive) PATH: ERR */
    WHY_ROOT,              /* refusing to delete the sandbox's root (PATH) */
    WHY_UNKNOWN,           /* unknown file operation */
    WHY_COUNT
};

/* A listing on stdout: one record per entry, each ending in a NUL byte:
 *     "TYPE MODE SIZE MTIME FLAGS PATH"
 * TYPE the enum nsbox_file_type as a digit, MODE octal, SIZE and MTIME
 * decimal, FLAGS 1 when the name was not UTF-8 (its bad bytes are '?'),
 * PATH relative to the listed directory, valid UTF-8. */

/* In the command's child: when argv is a file operation, performs it and
 * exits (never returns); otherwise returns -1. */
int nsbox_files_builtin(char **argv);

struct files_reply {
    long long value; /* "ok" */
    int code;        /* "err": the errno (1..4095) */
    enum files_why why;
    long long arg; /* 0..INT_MAX */
};

/* Parses the reply line, NUL-terminated, exactly (one line, nothing after
 * it, every number in range).  Returns 0 for "ok", 1 for "err", -1 for
 * anything else. */
int nsbox_files_reply_parse(const char *text, struct files_reply *r);

/* Parses a listing (len bytes of records).  Returns 0 with out filled
 * (free with nsbox_file_list_free; truncated left false), or -1 when any
 * record is malformed (out then empty). */
int nsbox_files_listing_parse(const char *buf, size_t len, struct nsbox_file_list *out);

/* Names on the wire are strict UTF-8 (common/utf8.h): the builtin encodes
 * them with the first, the client checks them with the second. */
static inline bool nsbox_files_utf8_sanitize(const char *in, char *out, size_t size)
{
    return nsbox_utf8_sanitize(in, out, size);
}

static inline bool nsbox_files_utf8_valid(const char *s, size_t n)
{
    return nsbox_utf8_valid(s, n);
}

#endif
