/* File helpers that work on directory file descriptors and never follow a
 * symlink they did not mean to.  Paths given here are relative to dirfd. */
#ifndef NSBOX_FSUTIL_H
#define NSBOX_FSUTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Removes name (file, symlink or whole tree) below dirfd without following
 * symlinks.  A missing name is not an error.  Returns 0 or -1. */
int nsbox_rm_rf_at(int dirfd, const char *name, struct nsbox_err *err);

/* Opens dirfd/name (not following a final symlink; "." for dirfd itself)
 * for listing.  Returns the DIR (caller closedir()s) or NULL. */
DIR *nsbox_opendir_at(int dirfd, const char *name, struct nsbox_err *err);

/* Creates the directory path (and missing parents) with mode.  Existing
 * directories are fine.  Returns 0 or -1. */
int nsbox_mkdir_p(const char *path, mode_t mode, struct nsbox_err *err);

/* Reads the whole regular file at dirfd/name (not following a final
 * symlink) into a NUL-terminated malloc'ed buffer of at most max bytes.
 * Returns the buffer (caller frees) and sets *len, or NULL. */
char *nsbox_read_file_at(int dirfd, const char *name, size_t max, size_t *len,
                         struct nsbox_err *err);

/* Writes all of data to fd, retrying short writes and EINTR.  Returns 0,
 * or -1 with errno set (EIO when write wrote nothing). */
int nsbox_write_all(int fd, const void *data, size_t len);

/* Writes data to dirfd/name atomically: a temporary file in the same
 * directory, fsync, rename.  Returns 0 or -1. */
int nsbox_write_file_atomic(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                            struct nsbox_err *err);

/* The same without fsync: for runtime state that is worthless after a
 * reboot (a sandbox's pid), where durability would only cost time. */
int nsbox_write_file_replace(int dirfd, const char *name, const void *data, size_t len, mode_t mode,
                             struct nsbox_err *err);

/* Opens (creating if needed) dirfd/name and takes a flock of the given
 * operation (LOCK_SH / LOCK_EX, optionally | LOCK_NB).  Returns the fd that
 * holds the lock, or -1 (errno EWOULDBLOCK when LOCK_NB found it taken). */
int nsbox_lock_at(int dirfd, const char *name, int operation, struct nsbox_err *err);

/* Whether p is a relative path of plain components: no leading '/', and no
 * empty, "." or ".." component (a listing's entries, joined to the listed
 * directory, must stay in it). */
bool nsbox_path_plain_relative(const char *p);

#endif
