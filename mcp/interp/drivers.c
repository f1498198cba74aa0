/* The drivers on the host: STORE/cache/drivers/<hash>/ (see interp.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/cleanup.h"
#include "../../common/fsutil.h"
#include "interp.h"

extern const char mcp_driver_python[], mcp_driver_python_end[];
extern const char mcp_driver_python_rich[], mcp_driver_python_rich_end[];
extern const char mcp_driver_python_charts[], mcp_driver_python_charts_end[];
extern const char mcp_driver_python_magics[], mcp_driver_python_magics_end[];
extern const char mcp_driver_python_ipython[], mcp_driver_python_ipython_end[];
extern const char mcp_driver_python_fork[], mcp_driver_python_fork_end[];
extern const char mcp_driver_node[], mcp_driver_node_end[];
extern const char mcp_driver_node_imports[], mcp_driver_node_imports_end[];
extern const char mcp_driver_r[], mcp_driver_r_end[];
extern const char mcp_driver_java[], mcp_driver_java_end[];

static const struct {
    const char *name;
    const char *start, *end;
} files[] = {
    {"python.py", mcp_driver_python, mcp_driver_python_end},
    {"python_rich.py", mcp_driver_python_rich, mcp_driver_python_rich_end},
    {"python_charts.py", mcp_driver_python_charts, mcp_driver_python_charts_end},
    {"python_magics.py", mcp_driver_python_magics, mcp_driver_python_magics_end},
    {"python_ipython.py", mcp_driver_python_ipython, mcp_driver_python_ipython_end},
    {"python_fork.py", mcp_driver_python_fork, mcp_driver_python_fork_end},
    {"node.js", mcp_driver_node, mcp_driver_node_end},
    {"node_imports.js", mcp_driver_node_imports, mcp_driver_node_imports_end},
    {"r_driver.R", mcp_driver_r, mcp_driver_r_end},
    {"JavaDriver.java", mcp_driver_java, mcp_driver_java_end},
};

#define N_FILES (sizeof(files) / sizeof(files[0]))

/* FNV-1a over every file: a name for this build's drivers (a cache key,
 * not a defence: the store is the user's own). */
static uint64_t drivers_hash(void)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < N_FILES; i++) {
        for (const char *p = files[i].name; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
        for (const char *p = files[i].start; p < files[i].end; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return h;
}

static int write_all(const char *dir, struct nsbox_err *err)
{
    _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return nsbox_err_sys(err, "cannot open %s", dir);
    for (size_t i = 0; i < N_FILES; i++)
        if (nsbox_write_file_replace(dfd, files[i].name, files[i].start,
                                     (size_t)(files[i].end - files[i].start), 0644, err) < 0)
            return -1;
    return chmod(dir, 0755) < 0 ? nsbox_err_sys(err, "cannot chmod %s", dir) : 0;
}

int mcp_interp_drivers_dir(const char *store_root, char *path, size_t size, struct nsbox_err *err)
{
    char parent[PATH_MAX], tmp[PATH_MAX + 32];
    struct stat st;

    snprintf(parent, sizeof(parent), "%s/cache/drivers", store_root);
    snprintf(path, size, "%s/%016llx", parent, (unsigned long long)drivers_hash());
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (nsbox_mkdir_p(parent, 0755, err) < 0)
        return -1;
    snprintf(tmp, sizeof(tmp), "%s/.new-XXXXXX", parent);
    if (mkdtemp(tmp) == NULL)
        return nsbox_err_sys(err, "cannot create a directory in %s", parent);
    if (write_all(tmp, err) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        struct nsbox_err ignored;
        nsbox_rm_rf_at(AT_FDCWD, tmp, &ignored);
        /* Another server wrote the same drivers first: theirs will do. */
        if ((e == EEXIST || e == ENOTEMPTY) && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            return 0;
        return err->msg[0] ? -1 : nsbox_err_sys(err, "cannot create %s", path);
    }
    return 0;
}
