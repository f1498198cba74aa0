/* Pause and resume (pause.h) over runtime/freezer.h. */
#include "pause.h"

#include <errno.h>

#include "../runtime/freezer.h"

static bool claim(struct box *box)
{
    bool no = false;
    return __atomic_compare_exchange_n(&box->pausing, &no, true, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

static void unclaim(struct box *box)
{
    __atomic_store_n(&box->pausing, false, __ATOMIC_SEQ_CST);
}

static unsigned users(const struct box *box)
{
    return __atomic_load_n(&box->users, __ATOMIC_SEQ_CST);
}

static int busy(const struct box *box, struct nsbox_err *err)
{
    return nsbox_err_set(err, EBUSY,
                         "sandbox %s is in use (a call running on it, an open terminal or a "
                         "connection being made): not paused; try again when it is idle",
                         box->sb.id);
}

int box_pause(struct box *box, struct nsbox_err *err)
{
    char why[768];

    if (box_pause_usable(box, why, sizeof(why)) < 0)
        return nsbox_err_set(err, ENOTSUP,
                             "sandbox %s cannot be paused here, so it keeps running: %s",
                             box->sb.id, why);
    if (!claim(box))
        return nsbox_err_set(err, EBUSY, "sandbox %s is being paused or resumed by another call",
                             box->sb.id);
    int r = -1;
    if (nsbox_freezer_state(&box->sb) == 1)
        nsbox_err_set(err, EALREADY, "sandbox %s is already paused", box->sb.id);
    else if (users(box) > 0)
        busy(box, err);
    else if (nsbox_freezer_freeze(&box->sb, BOX_PAUSE_WAIT_MS, err) == 0)
        r = 0;
    /* A use that began while it froze has counted itself before looking:
     * either it sees the freezer set and thaws, or this sees it here. */
    if (r == 0 || err->code == EINTR ? users(box) > 0 : false) {
        nsbox_freezer_thaw(&box->sb, NULL);
        r = busy(box, err);
    }
    unclaim(box);
    return r;
}

int box_resume(struct box *box, struct nsbox_err *err)
{
    char why[768];

    if (box_pause_usable(box, why, sizeof(why)) < 0)
        return nsbox_err_set(err, ENOTSUP, "sandbox %s cannot be paused or resumed here: %s",
                             box->sb.id, why);
    if (!claim(box))
        return nsbox_err_set(err, EBUSY, "sandbox %s is being paused or resumed by another call",
                             box->sb.id);
    int r = -1;
    if (nsbox_freezer_state(&box->sb) != 1)
        nsbox_err_set(err, EALREADY, "sandbox %s is not paused: it is running", box->sb.id);
    else
        r = nsbox_freezer_thaw(&box->sb, err);
    unclaim(box);
    return r;
}

int box_use_begin(struct box *box, bool *woke, struct nsbox_err *err)
{
    if (woke != NULL)
        *woke = false;
    __atomic_add_fetch(&box->users, 1, __ATOMIC_SEQ_CST);
    /* A box without a freezer is never paused: nothing to read. */
    if (box->sb.cgroup.kind == NSBOX_CGROUP_NONE || nsbox_freezer_state(&box->sb) != 1)
        return 0;
    if (nsbox_freezer_thaw(&box->sb, err) < 0 || nsbox_sandbox_open_finish(&box->sb, err) < 0) {
        box_use_end(box);
        return -1;
    }
    if (woke != NULL)
        *woke = true;
    return 0;
}

void box_use_end(struct box *box)
{
    __atomic_sub_fetch(&box->users, 1, __ATOMIC_SEQ_CST);
}

bool box_paused(const struct box *box)
{
    return box->sb.cgroup.kind != NSBOX_CGROUP_NONE && nsbox_freezer_state(&box->sb) == 1;
}

int box_pause_usable(const struct box *box, char *why, size_t why_size)
{
    return nsbox_freezer_usable(&box->sb, why, why_size);
}

int box_cpu_usage(const struct box *box, uint64_t *usec)
{
    return nsbox_cgroup_cpu_usage(&box->sb, usec);
}

int box_pause_host(char *why, size_t why_size)
{
    return nsbox_freezer_host(why, why_size);
}
