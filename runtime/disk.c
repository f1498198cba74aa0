/* A sandbox's disk (see disk.h).  STUB: being implemented. */
#include "disk.h"

#include <errno.h>
#include <stdio.h>

#include "sandbox.h"

uint64_t nsbox_disk_inodes_for(uint64_t bytes)
{
    uint64_t n = bytes / 4096;
    return n < 1024 ? 1024 : n;
}

const char *nsbox_disk_kind_name(enum nsbox_disk_kind kind)
{
    return kind == NSBOX_DISK_TMPFS ? "tmpfs" : kind == NSBOX_DISK_QUOTA ? "quota" : "none";
}

bool nsbox_quota_usable(const char *dir, char *why, size_t why_size)
{
    (void)dir;
    if (why)
        snprintf(why, why_size, "not implemented yet");
    return false;
}

int nsbox_quota_apply(const char *dir, uint32_t projid, uint64_t bytes, uint64_t inodes,
                      struct nsbox_err *err)
{
    (void)dir, (void)projid, (void)bytes, (void)inodes;
    return nsbox_err_set(err, ENOTSUP, "not implemented yet");
}

int nsbox_quota_used(const char *dir, uint32_t projid, uint64_t *bytes, uint64_t *inodes,
                     struct nsbox_err *err)
{
    (void)dir, (void)projid, (void)bytes, (void)inodes;
    return nsbox_err_set(err, ENOTSUP, "not implemented yet");
}

void nsbox_quota_clear(const char *dir, uint32_t projid)
{
    (void)dir, (void)projid;
}

int nsbox_sandbox_disk_usage(const struct nsbox_sandbox *sb, struct nsbox_disk_usage *u,
                             struct nsbox_err *err)
{
    *u = (struct nsbox_disk_usage){.kind = sb->disk.kind, .limit_bytes = sb->disk.limit_bytes,
                                   .limit_inodes = sb->disk.limit_inodes};
    (void)err;
    return 0;
}
