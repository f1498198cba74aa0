/* `nsbox version`: nsbox's version, the commit it was built from (the
 * Makefile passes NSBOX_GIT_COMMIT; "unknown" from a tarball), and the
 * versions of the libraries and kernel it runs with, asked at run time. */
#include <archive.h>
#include <jansson.h>
#include <seccomp.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli.h"

#ifndef NSBOX_GIT_COMMIT
#define NSBOX_GIT_COMMIT "unknown"
#endif

struct versions {
    char seccomp[32];
    const char *jansson, *libarchive;
    struct utsname uts;
};

static void collect(struct versions *v)
{
    const struct scmp_version *s = seccomp_version();
    snprintf(v->seccomp, sizeof(v->seccomp), "%u.%u.%u", s->major, s->minor, s->micro);
    v->jansson = jansson_version_str();
    v->libarchive = archive_version_string(); /* "libarchive 3.6.2" */
    if (strncmp(v->libarchive, "libarchive ", 11) == 0)
        v->libarchive += 11;
    if (uname(&v->uts) < 0)
        strcpy(v->uts.release, "unknown");
}

void cli_print_version(bool json)
{
    struct versions v;
    collect(&v);
    if (json) {
        json_t *j = json_pack("{s:s,s:s,s:{s:s,s:s,s:s},s:{s:s,s:s}}", "version",
                              NSBOX_VERSION_STRING, "commit", NSBOX_GIT_COMMIT, "libraries",
                              "libseccomp", v.seccomp, "jansson", v.jansson, "libarchive",
                              v.libarchive, "kernel", "release", v.uts.release, "machine",
                              v.uts.machine);
        json_dumpf(j, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(j);
        return;
    }
    printf("nsbox %s (commit %s)\n"
           "libseccomp %s, jansson %s, libarchive %s\n"
           "kernel %s %s\n",
           NSBOX_VERSION_STRING, NSBOX_GIT_COMMIT, v.seccomp, v.jansson, v.libarchive,
           v.uts.release, v.uts.machine);
}

int cmd_version(struct cli_globals *g, int argc, char **argv)
{
    const char *name, *arg;
    bool json = false;
    int r;

    while ((r = cli_next_option(cli_find_command("version"), argc, argv, &name, &arg)) == 1)
        json = true; /* --json, the only option */
    if (r < 0)
        return CLI_EXIT_USAGE;
    if (optind != argc)
        return cli_usage_error("version", "takes no arguments");
    cli_print_version(json);
    return 0;
}
