#include "caps.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdbool.h>
#include <sys/capability.h>
#include <sys/prctl.h>

/* NET_BIND_SERVICE: the broker's listeners on ports 80, 443 and 53 are
 * made by init (init.c, handle_listen), which runs no code of the
 * sandbox's; every command drops it with the rest. */
static const cap_value_t init_caps[] = {CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_NET_BIND_SERVICE,
                                        /* nested only: the last */
                                        CAP_SETFCAP};

static int drop_bounding(struct nsbox_err *err)
{
    /* Up to the highest the running kernel knows, not the headers. */
    for (int cap = 0; cap_valid(cap) || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
            return nsbox_err_sys(err, "cannot drop capability %d from the bounding set", cap);
    }
    return 0;
}

static int set_caps(const cap_value_t *caps, int n, struct nsbox_err *err)
{
    cap_t c = cap_init();
    if (c == NULL)
        return nsbox_err_sys(err, "cap_init");
    if (n > 0 && (cap_set_flag(c, CAP_PERMITTED, n, caps, CAP_SET) < 0 ||
                  cap_set_flag(c, CAP_EFFECTIVE, n, caps, CAP_SET) < 0)) {
        cap_free(c);
        return nsbox_err_sys(err, "cap_set_flag");
    }
    int r = cap_set_proc(c);
    cap_free(c);
    if (r < 0)
        return nsbox_err_sys(err, "cannot set capabilities");
    return 0;
}

static int clear_ambient_and_nnp(struct nsbox_err *err)
{
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return nsbox_err_sys(err, "cannot clear ambient capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot set no_new_privs");
    return 0;
}

int nsbox_caps_limit_for_init(bool nested, struct nsbox_err *err)
{
    /* The bounding set limits only what execve grants, and init never
     * execs: emptied here, once, it is empty in every command init forks,
     * and init keeps its four.  CAP_SETPCAP, needed for this and for the
     * securebits, goes with the final set. */
    if (drop_bounding(err) < 0)
        return -1;
    /* uid 0 inside gets no capabilities from execve, and no one can undo
     * that later. */
    if (prctl(PR_SET_SECUREBITS,
              SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
                  SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
              0, 0, 0) < 0)
        return nsbox_err_sys(err, "cannot lock securebits");
    if (clear_ambient_and_nnp(err) < 0)
        return -1;
    int n = (int)(sizeof(init_caps) / sizeof(init_caps[0]));
    return set_caps(init_caps, nested ? n : n - 1, err);
}

int nsbox_caps_for_idmap(struct nsbox_err *err)
{
    static const cap_value_t caps[] = {CAP_SETUID, CAP_SETGID, CAP_SETFCAP};
    return set_caps(caps, 3, err);
}

int nsbox_caps_clear(struct nsbox_err *err)
{
    if (clear_ambient_and_nnp(err) < 0)
        return -1;
    return set_caps(NULL, 0, err);
}
