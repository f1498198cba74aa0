/* Pause and resume: the one door for both front ends (nsbox pause/resume,
 * the server's sandbox_pause/sandbox_resume, transparent resume and
 * auto-pause).  A paused box's processes are frozen by its cgroup's
 * freezer (runtime/freezer.h): memory kept, no CPU used.
 *
 * Contract: the kernel's freezer state is the truth, read each time (the
 * CLI and the server see one answer).  Everything that is about to use a
 * box brackets the use with box_use_begin/box_use_end: begin wakes a
 * paused box first, and a pause refuses a box in use.  The pause checks
 * for users before and after it freezes (and thaws when one arrived), and
 * begin counts itself before it looks, so a use and a pause racing never
 * leave a use on a frozen box.  Where the freezer is missing, box_pause
 * says what is missing and how to fix it, and the box keeps running. */
#ifndef NSBOX_BOXES_PAUSE_H
#define NSBOX_BOXES_PAUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/err.h"
#include "box.h"

/* How long a freeze may take before it is undone (FREEZING → FROZEN). */
#define BOX_PAUSE_WAIT_MS 5000

/* Freezes box.  0, or -1 with err: ENOTSUP (no freezer here: the reason
 * and the fix), EALREADY (already paused), EBUSY (in use, or another pause
 * or resume is under way), ETIMEDOUT (did not freeze; thawed again). */
int box_pause(struct box *box, struct nsbox_err *err);

/* Thaws box.  0, or -1 with err: EALREADY (it is running), ENOTSUP. */
int box_resume(struct box *box, struct nsbox_err *err);

/* A use of box begins: counted, then box is thawed if paused (*woke says
 * whether it was; woke may be NULL).  0, or -1 with err when a paused box
 * could not be thawed (the use is then not counted). */
int box_use_begin(struct box *box, bool *woke, struct nsbox_err *err);
void box_use_end(struct box *box);

/* Whether box is paused now (its freezer is set). */
bool box_paused(const struct box *box);

/* 0 when box can be paused; else -1 with why (what is missing, the fix). */
int box_pause_usable(const struct box *box, char *why, size_t why_size);

/* The CPU time box has used, in microseconds: 0, or -1 when unknown. */
int box_cpu_usage(const struct box *box, uint64_t *usec);

/* Whether this host lets nsbox, as this user, pause sandboxes (doctor):
 * 0, or -1 with why. */
int box_pause_host(char *why, size_t why_size);

#endif
