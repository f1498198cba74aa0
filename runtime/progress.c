/* The pace of a running command's progress callback (sandbox.h,
 * nsbox_progress_pace): ticks at a steady progress_ms, so that what runs
 * on them (the server's workspace watch: boxes/run.c) keeps its period
 * however often output comes, and a call at once for new output, so that
 * a caller can stream it (the server: mcp/tools/stream.h). */
#include "../common/clock.h"
#include "sandbox.h"

static int64_t period(const struct nsbox_exec_opts *o)
{
    return o->progress_ms ? (int64_t)o->progress_ms : 1000;
}

void nsbox_progress_begin(struct nsbox_progress_pace *pp)
{
    *pp = (struct nsbox_progress_pace){0};
    pp->started_ms = pp->last_tick_ms = nsbox_now_ms();
}

int nsbox_progress_timeout(const struct nsbox_progress_pace *pp, const struct nsbox_exec_opts *o)
{
    if (o->progress == NULL)
        return -1;
    int64_t left = pp->last_tick_ms + period(o) - nsbox_now_ms();
    return left > 0 ? (int)left : 0;
}

void nsbox_progress_maybe(struct nsbox_progress_pace *pp, const struct nsbox_exec_opts *o,
                          const char *out, size_t out_len, const char *err, size_t err_len)
{
    if (o->progress == NULL)
        return;
    int64_t now = nsbox_now_ms();
    bool tick = now - pp->last_tick_ms >= period(o);
    bool news = out_len != pp->told_out || err_len != pp->told_err;
    if (!tick && !news)
        return;
    if (tick)
        pp->last_tick_ms = now;
    pp->told_out = out_len, pp->told_err = err_len;
    o->progress(o->progress_ctx, (uint64_t)(now - pp->started_ms), out ? out : "", out_len,
                err ? err : "", err_len);
}
