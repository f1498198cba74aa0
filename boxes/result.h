/* How a command ended, in words and numbers both front ends print the
 * same (boxes/result.c): the status, docker's exit codes, the result
 * record, the isolation a sandbox has. */
#ifndef NSBOX_BOXES_RESULT_H
#define NSBOX_BOXES_RESULT_H

#include <stdint.h>

#include "../runtime/sandbox.h"

/* How a command ended: "ok", "error", "timeout", "oom" or "signaled". */
const char *box_result_status(const struct nsbox_exec_result *r);

/* docker's exit code for it: the command's status, or 128+N for signal N
 * (126/127 come from init: not executable / not found). */
int box_result_exit_code(const struct nsbox_exec_result *r);

/* The exit code when nsbox itself failed (docker's). */
#define BOX_EXIT_NSBOX 125

/* Peak memory: the cgroup's, else the command's largest process. */
uint64_t box_result_memory_peak(const struct nsbox_exec_result *r);

/* The result record both front ends print: {status, exit_code, signal,
 * stdout, stderr, stdout_truncated, stderr_truncated, timed_out,
 * oom_killed, wall_ms, cpu_ms, memory_peak_bytes} (a new reference; NULL
 * when out of memory).  The CLI adds the limits in force, the server the
 * files the run changed. */
struct json_t;
struct json_t *box_result_json(const struct nsbox_exec_result *r);

/* {"mode": "namespaces"|"landlock", "missing": [...]}: the sandbox's
 * isolation and every layer it lacks (nsbox_isolation_missing, the list
 * `nsbox doctor` prints too).  A new reference, or NULL without memory. */
struct json_t *box_isolation_json(const struct nsbox_sandbox *sb);

#endif
