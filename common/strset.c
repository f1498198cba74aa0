#include "strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static char **find_slot(char **slots, size_t cap, const char *key)
{
    size_t i = hash(key) & (cap - 1);
    while (slots[i] != NULL && strcmp(slots[i], key) != 0)
        i = (i + 1) & (cap - 1);
    return &slots[i];
}

static int grow(struct nsbox_strset *set)
{
    size_t cap = set->cap ? set->cap * 2 : 64;
    char **slots = calloc(cap, sizeof(char *));
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < set->cap; i++)
        if (set->slots[i] != NULL)
            *find_slot(slots, cap, set->slots[i]) = set->slots[i];
    free(set->slots);
    set->slots = slots;
    set->cap = cap;
    return 0;
}

int nsbox_strset_add(struct nsbox_strset *set, const char *key)
{
    if ((set->count + 1) * 2 > set->cap && grow(set) < 0)
        return -1;
    char **slot = find_slot(set->slots, set->cap, key);
    if (*slot != NULL)
        return 0;
    *slot = strdup(key);
    if (*slot == NULL)
        return -1;
    set->count++;
    return 0;
}

bool nsbox_strset_has(const struct nsbox_strset *set, const char *key)
{
    return set->cap != 0 && *find_slot(set->slots, set->cap, key) != NULL;
}

void nsbox_strset_clear(struct nsbox_strset *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
    memset(set, 0, sizeof(*set));
}
