/* Init is the OOM killer's last choice in its sandbox: every command (and
 * persistent interpreter) starts with an oom_score_adj of at least
 * NSBOX_OOM_ADJ_COMMAND, init keeps the value it was born with.
 *
 * Why: in the sandbox's memory cgroup the killer picks the largest
 * badness, RSS plus oom_score_adj thousandths of the limit.  Init is a
 * clone of nsbox, so its RSS counts every page of nsbox's it shares; a
 * long-running server's (hundreds of MiB in the sanitizer build) made init
 * the victim of a command's balloon, and the sandbox died with it.  With
 * 500 a command's badness gets half the limit added.  Host-wide,
 * sandboxed code then goes before the host's own processes.
 *
 * How, without making anything dumpable: init opens its own
 * /proc/self/oom_score_adj first thing after the clone, while it still has
 * nsbox's credentials and is dumpable, so that it owns the file (any
 * change of credentials makes a process undumpable, and its /proc files
 * then belong to the host's root); later writes through that fd need
 * no permission check but the kernel's floor (oom_score_adj_min, which
 * only CAP_SYS_RESOURCE moves).  Before each fork init raises its value to
 * the command's, the child inherits it, and init lowers its own back to
 * where it was: never below the floor, so no privilege is needed, and no
 * command can go below the value init was born with either. */
#ifndef NSBOX_RUNTIME_OOM_ADJ_H
#define NSBOX_RUNTIME_OOM_ADJ_H

#define NSBOX_OOM_ADJ_COMMAND 500

struct nsbox_oom_adj {
    int fd;   /* init's /proc/self/oom_score_adj, or -1 (nothing is done) */
    int base; /* init's value when it was opened */
};

/* In init, right after the clone (before any change of credentials):
 * o->fd -1 when the file cannot be opened (logged; commands then keep
 * init's value). */
void nsbox_oom_adj_open(struct nsbox_oom_adj *o);

/* Around init's fork of a command: raise before, restore after (in the
 * parent, whether the fork worked or not). */
void nsbox_oom_adj_for_child(const struct nsbox_oom_adj *o);
void nsbox_oom_adj_restore(const struct nsbox_oom_adj *o);

#endif
