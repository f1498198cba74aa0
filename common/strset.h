/* A set of strings (open addressing, FNV-1a).  Owns copies of its keys. */
#ifndef NSBOX_STRSET_H
#define NSBOX_STRSET_H

#include <stdbool.h>
#include <stddef.h>

struct nsbox_strset {
    char **slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
};

/* Adds a copy of key.  Returns 0, or -1 when out of memory. */
int nsbox_strset_add(struct nsbox_strset *set, const char *key);
bool nsbox_strset_has(const struct nsbox_strset *set, const char *key);
void nsbox_strset_clear(struct nsbox_strset *set);

#endif
