/* Long-lived processes in a box (proc.h): the runtime's, behind the door. */
#include "proc.h"

#include "../runtime/cgroup.h"

int box_proc_start(struct box *box, const struct nsbox_exec_opts *o, struct nsbox_proc *p,
                   struct nsbox_err *err)
{
    return nsbox_proc_start(&box->sb, o, p, err);
}

int box_proc_adopt(struct box *box, pid_t pid, struct nsbox_proc *p, struct nsbox_err *err)
{
    return nsbox_proc_adopt(&box->sb, pid, p, err);
}

int box_proc_signal(struct nsbox_proc *p, int sig, struct nsbox_err *err)
{
    return nsbox_proc_signal(p, sig, err);
}

int box_proc_wait(struct nsbox_proc *p, int timeout_ms, struct nsbox_err *err)
{
    return nsbox_proc_wait(p, timeout_ms, err);
}

void box_proc_close(struct nsbox_proc *p)
{
    nsbox_proc_close(p);
}

void box_stats(const struct box *box, uint64_t *oom_kills, uint64_t *memory_peak)
{
    nsbox_cgroup_stats(&box->sb.cgroup, oom_kills, memory_peak);
}

void box_kill_all(struct box *box)
{
    nsbox_sandbox_kill_all(&box->sb);
}
