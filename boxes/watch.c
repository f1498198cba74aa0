/* File watches in a box (watch.h): the runtime's, behind the door. */
#include "watch.h"

#include <errno.h>

/* How long the sandbox has to say whether it watches. */
#define WATCH_START_MS 10000

int box_watch_start(struct box *box, const char *path, struct nsbox_watch *w, struct nsbox_err *err)
{
    struct nsbox_exec_opts eo;
    if (box_require_namespaces(box, "watching files", err) < 0)
        return -1;
    box_exec_defaults(box, &eo);
    return nsbox_watch_start(&box->sb, &eo, path, WATCH_START_MS, w, err);
}

int box_watch_fd(const struct nsbox_watch *w)
{
    return nsbox_watch_fd(w);
}

bool box_watch_is_dir(const struct nsbox_watch *w)
{
    return w->dir;
}

int box_watch_drain(struct nsbox_watch *w, bool *changed)
{
    return nsbox_watch_drain(w, changed);
}

void box_watch_stop(struct nsbox_watch *w)
{
    nsbox_watch_close(w);
}
