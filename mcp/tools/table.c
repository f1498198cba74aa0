/* The tool table: names, descriptions and output schemas.  One entry per
 * tool; the implementations are in *.c, the arguments are declared
 * in args.c. */
#include "../server.h"
#include "fork.h"
#include "contexts.h"
#include "ports.h"
#include "tools.h"

/* Each tool's inputSchema is not here: tools/list builds it from the
 * tool's declaration of its arguments (args.c), the same one its
 * decoder checks calls against. */

/* The disk fields of every record that describes a sandbox (boxes/
 * box_usage_json); the workspace ones only with a workspace. */
#define DISK_PROPS                                                                                 \
    "\"disk\":{\"type\":\"string\",\"enum\":[\"tmpfs\",\"quota\",\"none\"]},"                      \
    "\"disk_used_bytes\":{\"type\":\"integer\"},"                                                  \
    "\"disk_limit_bytes\":{\"type\":[\"integer\",\"null\"]},"                                      \
    "\"isolation\":{\"type\":\"object\",\"properties\":{"                                          \
    "\"mode\":{\"type\":\"string\",\"enum\":[\"namespaces\",\"landlock\"]},"                       \
    "\"missing\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"                          \
    "\"workspace_disk\":{\"type\":\"string\",\"enum\":[\"quota\",\"measured\"]},"                  \
    "\"workspace_used_bytes\":{\"type\":\"integer\"},"                                             \
    "\"workspace_limit_bytes\":{\"type\":[\"integer\",\"null\"]},"
#define DISK_REQUIRED "\"disk\",\"disk_used_bytes\",\"disk_limit_bytes\""

/* A code context (contexts.c). */
#define CONTEXT_PROPS                                                                              \
    "\"context_id\":{\"type\":\"string\"},"                                                        \
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\",\"typescript\","        \
    "\"r\",\"java\"]},"                                                                            \
    "\"cwd\":{\"type\":\"string\"},\"default\":{\"type\":\"boolean\"},"                            \
    "\"forked_from\":{\"type\":\"string\"}"

/* A result's image, PDF: its block in content (index), or a link (uri)
 * (tools/results.h). */
#define IMAGE_REF                                                                                  \
    "{\"type\":\"object\",\"properties\":{\"mime_type\":{\"type\":\"string\"},"                    \
    "\"bytes\":{\"type\":\"integer\"},\"content\":{\"type\":\"integer\"},"                         \
    "\"uri\":{\"type\":\"string\"}},\"required\":[\"mime_type\",\"bytes\"]}"

/* One display bundle of a cell (mcp/interp/bundle.h). */
#define BUNDLE_SCHEMA                                                                              \
    "{\"type\":\"object\",\"properties\":{\"is_main_result\":{\"type\":\"boolean\"},"              \
    "\"text\":{\"type\":\"string\"},\"html\":{\"type\":\"string\"},"                               \
    "\"markdown\":{\"type\":\"string\"},\"svg\":{\"type\":\"string\"},"                            \
    "\"latex\":{\"type\":\"string\"},\"javascript\":{\"type\":\"string\"},\"json\":{},"            \
    "\"data\":{\"type\":\"object\"},\"chart\":{\"type\":\"object\"},"                              \
    "\"png\":" IMAGE_REF ",\"jpeg\":" IMAGE_REF ",\"pdf\":" IMAGE_REF ","                          \
    "\"extra\":{\"type\":\"object\"}}}"

/* execute_code in a kept sandbox's persistent interpreter
 * (docs/interpreters.md); "error" in every record. */
#define INTERP_PROPS                                                                               \
    "\"interpreter\":{\"type\":\"string\",\"enum\":[\"persistent\",\"process\"]},"                 \
    "\"warm\":{\"type\":\"boolean\"}," /* one-shot: run by its spare's zygote (docs/warm.md) */    \
    "\"result\":{\"type\":[\"string\",\"null\"]},\"state_lost\":{\"type\":\"boolean\"},"           \
    "\"state_lost_reason\":{\"type\":\"string\"},\"interrupted\":{\"type\":\"boolean\"},"          \
    "\"error_type\":{\"type\":\"string\"},\"error_value\":{\"type\":\"string\"},"                  \
    "\"figures\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                            \
    "\"execution_count\":{\"type\":[\"integer\",\"null\"]},"                                       \
    "\"results\":{\"type\":\"array\",\"items\":" BUNDLE_SCHEMA "},"                                \
    "\"results_truncated\":{\"type\":\"boolean\"},"                                                \
    "\"error\":{\"type\":[\"object\",\"null\"],\"properties\":{"                                   \
    "\"name\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"},"                              \
    "\"traceback\":{\"type\":\"string\"}}},"

/* What a sandbox with network tried during the command (boxes/net.h):
 * connections, and the requests of inspected ones (method, path, the
 * secrets put in: names only). */
#define NETWORK_PROPS                                                                              \
    "\"network\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"              \
    "\"host\":{\"type\":\"string\"},\"port\":{\"type\":\"integer\"},"                              \
    "\"method\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},"                             \
    "\"secrets\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                            \
    "\"verdict\":{\"type\":\"string\",\"enum\":[\"allowed\",\"refused\",\"truncated\"]},"          \
    "\"reason\":{\"type\":\"string\"},\"bytes_out\":{\"type\":\"integer\"},"                       \
    "\"bytes_in\":{\"type\":\"integer\"},\"connections\":{\"type\":\"integer\"}}}},"

/* Output past the call's max_inline_kb (tools/output.h): cut inline, kept
 * whole in a kept sandbox. */
#define OUTPUT_PROPS                                                                               \
    "\"stdout_cut\":{\"type\":\"boolean\"},\"stderr_cut\":{\"type\":\"boolean\"},"                 \
    "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"},"             \
    "\"stdout_path\":{\"type\":\"string\"},\"stderr_path\":{\"type\":\"string\"},"                 \
    "\"stdout_uri\":{\"type\":\"string\"},\"stderr_uri\":{\"type\":\"string\"},"

/* A file the run created or changed (tools/changes.h); uri in a kept
 * sandbox (resources/read). */
#define FILES_PROPS                                                                                \
    "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"                \
    "\"path\":{\"type\":\"string\"},\"path_base64\":{\"type\":\"string\"},"                        \
    "\"change\":{\"type\":\"string\",\"enum\":[\"created\",\"modified\"]},"                        \
    "\"size\":{\"type\":\"integer\"},\"mime_type\":{\"type\":[\"string\",\"null\"]},"              \
    "\"uri\":{\"type\":\"string\"}}}}},"

#define RESULT_PROPS                                                                                 \
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"oom\",\"signaled\"]}," \
    "\"exit_code\":{\"type\":\"integer\"},\"signal\":{\"type\":\"integer\"},"                        \
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                             \
    "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"       \
    "\"timed_out\":{\"type\":\"boolean\"},\"oom_killed\":{\"type\":\"boolean\"},"                    \
    "\"wall_ms\":{\"type\":\"integer\"},\"cpu_ms\":{\"type\":\"integer\"},"                          \
    "\"memory_peak_bytes\":{\"type\":\"integer\"}," DISK_PROPS INTERP_PROPS NETWORK_PROPS            \
        OUTPUT_PROPS FILES_PROPS
#define RESULT_REQUIRED                                                                                        \
    "\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\",\"timed_out\",\"oom_killed\"," DISK_REQUIRED \
    "]"
#define RESULT_SCHEMA "{\"type\":\"object\",\"properties\":{" RESULT_PROPS RESULT_REQUIRED "}"
/* run_command's: a run's result, or with background a process's start
 * (processes.c; stdout_bytes and stderr_bytes are in OUTPUT_PROPS). */
#define RUN_SCHEMA                                                                                 \
    "{\"type\":\"object\",\"properties\":{\"handle\":{\"type\":\"string\"},"                       \
    "\"name\":{\"type\":\"string\"},\"command\":{\"type\":\"string\"},"                            \
    "\"started_at\":{\"type\":\"string\"},\"running\":{\"type\":\"boolean\"},"                     \
    "\"sandbox_id\":{\"type\":\"string\"}," RESULT_PROPS "\"anyOf\":[{" RESULT_REQUIRED "},"       \
    "{\"required\":[\"handle\",\"running\"]}]}"

#define LIMITS_OUT                                                                                 \
    "{\"type\":\"object\",\"properties\":{\"memory_mb\":{\"type\":\"number\"},"                    \
    "\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"                              \
    "\"timeout_s\":{\"type\":\"number\"},\"enforced\":{\"type\":\"string\"}}}"

#define ENTRIES_SCHEMA                                                                               \
    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"                           \
    "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"                \
    "\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"}," \
    "\"mode\":{\"type\":\"string\"},\"mtime\":{\"type\":\"integer\"}}}},"                            \
    "\"truncated\":{\"type\":\"boolean\"},\"tree\":{\"type\":\"string\"}},"                          \
    "\"required\":[\"entries\",\"truncated\"]}"

/* A background process (processes.c). */
#define PROCESS_PROPS                                                                              \
    "\"handle\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"                             \
    "\"command\":{\"type\":\"string\"},\"started_at\":{\"type\":\"string\"},"                      \
    "\"running\":{\"type\":\"boolean\"},\"exit_code\":{\"type\":\"integer\"},"                     \
    "\"signal\":{\"type\":\"integer\"},\"ended_with_sandbox\":{\"type\":\"boolean\"},"             \
    "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"}"

/* The secrets a sandbox was granted (tools/secrets.c): names and
 * variables, never values. */
#define SECRETS_OUT                                                                                \
    "{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"                          \
    "\"name\":{\"type\":\"string\"},\"env\":{\"type\":\"string\"}}}}"

const struct mcp_tool mcp_tools[] = {
    {"sandbox_create", "Create a sandbox",
     "Start a long-lived sandbox from an image (by image reference, or by language). Files "
     "persist in it between calls (working directory /workspace), within disk_mb in total; "
     "a persistent workspace has its own budget, workspace_mb. It has no network unless network "
     "names what it may reach, within the operator's allow-list; every later result then lists "
     "what it tried (network). secrets grants operator-defined secrets (list_secrets) by name: "
     "the sandbox sees a placeholder in each one's variable, and their hosts join network. "
     "Returns its id, the limits in force and the disk in use.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"}," DISK_PROPS
     "\"network_rules\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"secrets\":" SECRETS_OUT ",\"limits\":" LIMITS_OUT "},"
     "\"required\":[\"sandbox_id\",\"image\",\"digest\",\"limits\"," DISK_REQUIRED "]}",
     mcp_tool_sandbox_create, 0, MCP_HINT_NETWORK | MCP_HINT_INSTALLS},
    {"sandbox_list", "List sandboxes", "The sandboxes this session created and still runs.",
     "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"},"
     "\"created\":{\"type\":\"integer\"},"
     "\"state\":{\"type\":\"string\",\"enum\":[\"running\",\"paused\"]}," DISK_PROPS
     "\"limits\":" LIMITS_OUT "},"
     "\"required\":[\"sandbox_id\"," DISK_REQUIRED "]}}},"
     "\"required\":[\"sandboxes\"]}",
     mcp_tool_sandbox_list, 0, MCP_HINT_READ_ONLY},
    {"sandbox_stop", "Stop a sandbox",
     "Kill every process in a sandbox of this session and remove it with its files.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"stopped\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"stopped\"]}",
     mcp_tool_sandbox_stop, 0, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"sandbox_pause", "Pause a sandbox",
     "Freeze every process of a sandbox made by sandbox_create (its cgroup's freezer): memory "
     "and files are kept, no CPU is used. The next call that uses it (or a connection to its "
     "exposed ports) resumes it; sandbox_resume does so at once. Refused, with the reason, "
     "while a call, a terminal or a connection uses it, or where the host has no freezer.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"state\":{\"type\":\"string\",\"enum\":[\"paused\"]}},"
     "\"required\":[\"sandbox_id\",\"state\"]}",
     mcp_tool_sandbox_pause, 0, 0},
    {"sandbox_resume", "Resume a sandbox",
     "Thaw a sandbox paused by sandbox_pause or by the server's auto-pause: its processes go on "
     "where they stopped.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"state\":{\"type\":\"string\",\"enum\":[\"running\"]}},"
     "\"required\":[\"sandbox_id\",\"state\"]}",
     mcp_tool_sandbox_resume, 0, 0},
    {"context_create", "Create a code context",
     "Start another persistent interpreter (python, javascript, typescript, r or java) in a "
     "sandbox made by sandbox_create, with a working directory of its own (default: the "
     "sandbox's): its "
     "variables are its own, the sandbox's files, limits and network are shared. Run code in it "
     "with execute_code {sandbox_id, context}.",
     "{\"type\":\"object\",\"properties\":{" CONTEXT_PROPS ",\"sandbox_id\":{\"type\":\"string\"}},"
     "\"required\":[\"context_id\",\"language\",\"cwd\",\"sandbox_id\"]}",
     mcp_tool_context_create, 0, 0},
    {"context_list", "List code contexts",
     "The code contexts of a sandbox: the default ones (python, javascript, typescript, and r "
     "and java once they ran: what execute_code without a context uses), then those made with "
     "context_create, oldest first.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"contexts\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" CONTEXT_PROPS
     "},\"required\":[\"context_id\",\"language\",\"cwd\"]}}},"
     "\"required\":[\"sandbox_id\",\"contexts\"]}",
     mcp_tool_context_list, 0, MCP_HINT_READ_ONLY},
    {"context_restart", "Restart a code context",
     "Start a code context's interpreter anew: its variables and imports are gone, its files "
     "stay.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"context_id\":{\"type\":\"string\"},\"restarted\":{\"type\":\"boolean\"}},"
     "\"required\":[\"sandbox_id\",\"context_id\",\"restarted\"]}",
     mcp_tool_context_restart, 0, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"context_remove", "Remove a code context",
     "Kill a code context made with context_create and forget it (the default ones cannot be "
     "removed).",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"context_id\":{\"type\":\"string\"},\"removed\":{\"type\":\"boolean\"}},"
     "\"required\":[\"sandbox_id\",\"context_id\",\"removed\"]}",
     mcp_tool_context_remove, 0, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"sandbox_commit", "Save a sandbox as an image",
     "Save a sandbox's files (everything it installed or changed, but not /tmp) as a new image "
     "localhost/nsbox-commit/NAME[:TAG], to start later sandboxes from with sandbox_create "
     "{image}. A name is never replaced; the operator caps how many such images exist.",
     "{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},"
     "\"digest\":{\"type\":\"string\"},\"base\":{\"type\":\"string\"}},"
     "\"required\":[\"image\",\"digest\"]}",
     mcp_tool_sandbox_commit, MCP_NEEDS_COMMITS, 0},
    {"sandbox_fork", "Fork a sandbox",
     "Make count (1-10) new sandboxes with a copy of a sandbox's files as they are now. Each "
     "child is a sandbox of its own: a new id, the parent's limits unless given, no network "
     "unless given, its image's env plus env (never the parent's). Processes and memory are "
     "carried only where CRIU works on the host: otherwise (state_lost, with "
     "state_lost_reason) interpreters in the children start fresh. What is carried and what "
     "is not: carried, not_carried.",
     "{\"type\":\"object\",\"properties\":{\"parent\":{\"type\":\"string\"},"
     "\"children\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
     "\"state_lost\":{\"type\":\"boolean\"},\"state_lost_reason\":{\"type\":\"string\"},"
     "\"carried\":{\"type\":\"string\"},\"not_carried\":{\"type\":\"string\"}},"
     "\"required\":[\"parent\",\"children\"]}",
     mcp_tool_sandbox_fork, 0, MCP_HINT_NETWORK},
    {"sandbox_checkpoint", "Checkpoint a sandbox",
     "Save a sandbox's state (its files; its processes and memory only where CRIU works, "
     "else state_lost says why) to the server's checkpoint store, to make new sandboxes from "
     "later with sandbox_restore, after a restart of the server too. The sandbox runs on. "
     "The operator bounds how many and how large.",
     "{\"type\":\"object\",\"properties\":{\"checkpoint_id\":{\"type\":\"string\"},"
     "\"sandbox_id\":{\"type\":\"string\"},\"image\":{\"type\":\"string\"},"
     "\"created\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"},"
     "\"memory\":{\"type\":\"boolean\"},\"state_lost\":{\"type\":\"boolean\"},"
     "\"state_lost_reason\":{\"type\":\"string\"}},\"required\":[\"checkpoint_id\"]}",
     mcp_tool_sandbox_checkpoint, MCP_NEEDS_CHECKPOINTS, 0},
    {"sandbox_restore", "Restore a checkpoint",
     "Make a new sandbox from a checkpoint (sandbox_checkpoint). The checkpoint is verified "
     "whole first; one changed by anything but the server is refused. Limits as the "
     "checkpointed sandbox's unless given; no network unless given.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"checkpoint_id\":{\"type\":\"string\"},\"memory\":{\"type\":\"boolean\"},"
     "\"state_lost\":{\"type\":\"boolean\"},\"state_lost_reason\":{\"type\":\"string\"}},"
     "\"required\":[\"sandbox_id\",\"checkpoint_id\"]}",
     mcp_tool_sandbox_restore, MCP_NEEDS_CHECKPOINTS, MCP_HINT_NETWORK},
    {"checkpoint_list", "List checkpoints",
     "This tenant's checkpoints, their size, and the budget (bytes, budget_bytes, "
     "max_checkpoints).",
     "{\"type\":\"object\",\"properties\":{\"checkpoints\":{\"type\":\"array\"},"
     "\"bytes\":{\"type\":\"integer\"},\"budget_bytes\":{\"type\":\"integer\"},"
     "\"max_checkpoints\":{\"type\":\"integer\"},\"refused\":{\"type\":\"integer\"}},"
     "\"required\":[\"checkpoints\"]}",
     mcp_tool_checkpoint_list, MCP_NEEDS_CHECKPOINTS, MCP_HINT_READ_ONLY},
    {"checkpoint_delete", "Delete a checkpoint", "Remove a checkpoint from the store.",
     "{\"type\":\"object\",\"properties\":{\"checkpoint_id\":{\"type\":\"string\"},"
     "\"deleted\":{\"type\":\"boolean\"}},\"required\":[\"checkpoint_id\",\"deleted\"]}",
     mcp_tool_checkpoint_delete, MCP_NEEDS_CHECKPOINTS, MCP_HINT_DESTRUCTIVE},
    {"install_packages", "Install packages",
     "Install packages into a sandbox made by sandbox_create with pip, npm (into the working "
     "directory) or apt: only that manager's registry is reachable, for the install alone; the "
     "sandbox is sealed again before anything else runs in it. A set installed into a fresh "
     "sandbox is cached: sandbox_create {packages} with the same set starts from it without "
     "network. Returns the manager's exit code, the end of its output, what it reached "
     "(network) and whether the set is cached.",
     "{\"type\":\"object\",\"properties\":{\"manager\":{\"type\":\"string\"},"
     "\"status\":{\"type\":\"string\"},\"exit_code\":{\"type\":\"integer\"},"
     "\"output\":{\"type\":\"string\"},\"network\":{\"type\":\"array\"},"
     "\"cached\":{\"type\":\"boolean\"},\"not_cached\":{\"type\":\"string\"},"
     "\"cache_key\":{\"type\":\"string\"},\"cache_image\":{\"type\":\"string\"},"
     "\"install_ms\":{\"type\":\"integer\"},\"commit_ms\":{\"type\":\"integer\"}},"
     "\"required\":[\"status\",\"exit_code\",\"output\",\"network\",\"cached\"]}",
     mcp_tool_install_packages, MCP_NEEDS_INSTALLS, MCP_HINT_INSTALLS},
    {"execute_code", "Execute code",
     "Run a program in a sandbox: in a fresh one for the language (removed afterwards) or, "
     "with sandbox_id, in one made by sandbox_create. A program that fails is a normal "
     "result (status \"error\" and its exit code), not a tool error. No network unless the "
     "fresh sandbox is given some (network) or the kept one has it; then the result lists what "
     "was tried, allowed or refused (network).",
     RESULT_SCHEMA, mcp_tool_execute_code, 0, MCP_HINT_NETWORK},
    {"run_command", "Run a shell command",
     "Run a command line with /bin/sh -c, in a fresh sandbox or, with sandbox_id, in a "
     "sandbox made by sandbox_create. No network unless the fresh sandbox is given some "
     "(network) or the kept one has it; then the result lists what was tried (network). "
     "With background: true (and sandbox_id) it starts as process_start does and returns "
     "the process's handle at once.",
     RUN_SCHEMA, mcp_tool_run_command, 0, MCP_HINT_NETWORK},
    {"process_start", "Start a background process",
     "Start a command line (/bin/sh -c) in a sandbox made by sandbox_create and return its "
     "handle at once: a dev server, a watcher, a long test run. It runs until it ends, is "
     "signalled (process_signal) or its sandbox stops; stdin is empty. Its stdout and stderr "
     "are kept apart in a bounded ring each: read them with process_logs.",
     "{\"type\":\"object\",\"properties\":{" PROCESS_PROPS ",\"sandbox_id\":{\"type\":\"string\"}},"
     "\"required\":[\"handle\",\"name\",\"started_at\",\"running\"]}",
     mcp_tool_process_start, 0, 0},
    {"process_list", "List background processes",
     "The background processes of a sandbox, oldest first: running ones and the last ended ones.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"processes\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{" PROCESS_PROPS
     "}}}},\"required\":[\"sandbox_id\",\"processes\"]}",
     mcp_tool_process_list, 0, MCP_HINT_READ_ONLY},
    {"process_logs", "Read a background process's output",
     "Output of a background process since cursor (absent: the oldest byte kept), stdout and "
     "stderr apart. Pass back the cursor returned to read each byte once; bytes the ring "
     "dropped before they were read are counted (dropped_bytes). Text is UTF-8, each invalid "
     "byte replaced by '?'. eof: it has ended and everything was read.",
     "{\"type\":\"object\",\"properties\":{\"handle\":{\"type\":\"string\"},"
     "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
     "\"cursor\":{\"type\":\"string\"},\"stdout_dropped\":{\"type\":\"integer\"},"
     "\"stderr_dropped\":{\"type\":\"integer\"},\"dropped_bytes\":{\"type\":\"integer\"},"
     "\"eof\":{\"type\":\"boolean\"},\"running\":{\"type\":\"boolean\"},"
     "\"exit_code\":{\"type\":\"integer\"},\"signal\":{\"type\":\"integer\"}},"
     "\"required\":[\"handle\",\"cursor\",\"dropped_bytes\",\"eof\",\"running\"]}",
     mcp_tool_process_logs, 0, MCP_HINT_READ_ONLY},
    {"process_signal", "Signal a background process",
     "Send a signal (TERM by default; KILL, INT, HUP, QUIT, USR1, USR2) to a background "
     "process's group.",
     "{\"type\":\"object\",\"properties\":{\"handle\":{\"type\":\"string\"},"
     "\"signal\":{\"type\":\"string\"},\"sent\":{\"type\":\"boolean\"}},"
     "\"required\":[\"handle\",\"signal\",\"sent\"]}",
     mcp_tool_process_signal, 0, MCP_HINT_DESTRUCTIVE},
    {"process_wait", "Wait for a background process",
     "Wait up to timeout_s for a background process to end: its exit_code (and signal), or "
     "running: true when it still runs.",
     "{\"type\":\"object\",\"properties\":{\"handle\":{\"type\":\"string\"},"
     "\"running\":{\"type\":\"boolean\"},\"exit_code\":{\"type\":\"integer\"},"
     "\"signal\":{\"type\":\"integer\"},\"ended_with_sandbox\":{\"type\":\"boolean\"},"
     "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"}},"
     "\"required\":[\"handle\",\"running\"]}",
     mcp_tool_process_wait, 0, MCP_HINT_READ_ONLY},
    {"write_file", "Write a file",
     "Write a file in a sandbox made by sandbox_create (path relative to its working "
     "directory, or absolute inside it); missing parent directories are made. Text (utf-8) "
     "or base64 for binary; append to add.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
     "\"bytes_written\":{\"type\":\"integer\"},\"appended\":{\"type\":\"boolean\"}},"
     "\"required\":[\"path\",\"bytes_written\"]}",
     mcp_tool_write_file, 0, MCP_HINT_DESTRUCTIVE},
    {"read_file", "Read a file",
     "Read a regular file from a sandbox (1 MiB by default, at most 8 MiB per call; offset "
     "and length page through larger files). Binary content comes back as base64; images "
     "also as image content. Over HTTP, url: true returns a signed download URL "
     "(download_url) instead of the content, for a file too large for the conversation.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
     "\"size\":{\"type\":\"integer\"},\"offset\":{\"type\":\"integer\"},"
     "\"encoding\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
     "\"truncated\":{\"type\":\"boolean\"},\"mime_type\":{\"type\":\"string\"},"
     "\"download_url\":{\"type\":\"string\"},\"download_expires_at\":{\"type\":\"string\"}},"
     "\"required\":[\"path\",\"size\",\"encoding\",\"content\",\"truncated\"]}",
     mcp_tool_read_file, 0, MCP_HINT_READ_ONLY},
    {"list_directory", "List a directory",
     "Entries of a directory in a sandbox (recursive: the whole tree, at most 10000 "
     "entries), without following symlinks.",
     ENTRIES_SCHEMA, mcp_tool_list_directory, 0, MCP_HINT_READ_ONLY},
    {"create_directory", "Create a directory",
     "Create a directory (and its missing parents) in a sandbox.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
     "\"created\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"created\"]}",
     mcp_tool_create_directory, 0, MCP_HINT_IDEMPOTENT},
    {"delete_path", "Delete a file or directory",
     "Delete a file, symlink or (with recursive) a directory tree in a sandbox.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
     "\"deleted\":{\"type\":\"boolean\"}},\"required\":[\"path\",\"deleted\"]}",
     mcp_tool_delete_path, 0, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"project_structure", "Show a project tree",
     "A directory tree of a sandbox (default the working directory, 3 levels), as text and "
     "as entries.",
     ENTRIES_SCHEMA, mcp_tool_project_structure, 0, MCP_HINT_READ_ONLY},
    {"copy_in", "Copy a host file in",
     "Copy a file from an operator-allowed host directory into a sandbox made by "
     "sandbox_create (16 MiB at most).",
     "{\"type\":\"object\",\"properties\":{\"host_path\":{\"type\":\"string\"},"
     "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
     "\"required\":[\"host_path\",\"path\",\"bytes\"]}",
     mcp_tool_copy_in, MCP_NEEDS_HOST_DIRS, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"copy_out", "Copy a file out to the host",
     "Copy a file from a sandbox to an operator-allowed host directory (16 MiB at most; an "
     "existing host file is replaced only with overwrite).",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
     "\"host_path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},"
     "\"required\":[\"path\",\"host_path\",\"bytes\"]}",
     mcp_tool_copy_out, MCP_NEEDS_HOST_DIRS, MCP_HINT_DESTRUCTIVE},
    {"upload_url", "Get an upload URL",
     "A signed URL that takes one file by HTTP PUT (curl --upload-file FILE URL) into a sandbox "
     "made by sandbox_create, at path (missing parent directories are made), without the bytes "
     "passing through this conversation. It expires (expires_at), takes at most max_bytes, "
     "and works only while this session and the sandbox last. The file appears whole or not "
     "at all.",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},"
     "\"method\":{\"type\":\"string\"},\"expires_at\":{\"type\":\"string\"},"
     "\"max_bytes\":{\"type\":\"integer\"},\"path\":{\"type\":\"string\"},"
     "\"example\":{\"type\":\"string\"}},"
     "\"required\":[\"url\",\"method\",\"expires_at\",\"max_bytes\",\"path\"]}",
     mcp_tool_upload_url, MCP_NEEDS_URLS, 0},
    {"terminal_open", "Open a terminal",
     "An interactive shell (bash if the image has it, else sh; or command) on a terminal of "
     "cols x rows in a sandbox made by sandbox_create, for a person: a ws:// URL that one "
     "WebSocket client (xterm.js with its attach addon) connects to once. Input goes in as "
     "binary or text messages, output comes out as binary messages, and the text message "
     "{\"type\":\"resize\",\"cols\":N,\"rows\":M} resizes it. The URL expires unused "
     "(expires_at); the shell ends when the WebSocket closes, and with the sandbox.",
     "{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},"
     "\"sandbox_id\":{\"type\":\"string\"},\"expires_at\":{\"type\":\"string\"},"
     "\"cols\":{\"type\":\"integer\"},\"rows\":{\"type\":\"integer\"},"
     "\"protocol\":{\"type\":\"string\"}},"
     "\"required\":[\"url\",\"expires_at\",\"cols\",\"rows\"]}",
     mcp_tool_terminal_open, MCP_NEEDS_URLS, 0},
    {"port_expose", "Expose a port",
     "Give a URL for a TCP port of a sandbox made by sandbox_create, once something listens on "
     "it (waits up to wait_s). Over HTTP the URL goes through this server's preview proxy "
     "(mode \"path\": http://HOST/p/TOKEN/, the app sees / and X-Forwarded-Prefix; \"host\": "
     "http://PORT-TOKEN.DOMAIN/) and works for anyone holding it, without the MCP token, "
     "until expires_at, port_close or the sandbox's stop; over stdio it is a listener on the "
     "host's 127.0.0.1 (mode \"loopback\") for the sandbox's life. HTTP and WebSocket both "
     "work. The sandbox gains no way out. Exposing a port again returns the same URL.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"port\":{\"type\":\"integer\"},\"url\":{\"type\":\"string\"},"
     "\"expires_at\":{\"type\":[\"string\",\"null\"]},"
     "\"mode\":{\"type\":\"string\",\"enum\":[\"path\",\"host\",\"loopback\"]}},"
     "\"required\":[\"port\",\"url\",\"expires_at\",\"mode\"]}",
     mcp_tool_port_expose, 0, MCP_HINT_IDEMPOTENT},
    {"port_list", "List exposed ports",
     "The exposed ports of a sandbox (port, url, expires_at, mode), and the TCP ports "
     "something listens on in it (listening).",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"ports\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
     "\"port\":{\"type\":\"integer\"},\"url\":{\"type\":\"string\"},"
     "\"expires_at\":{\"type\":[\"string\",\"null\"]},\"mode\":{\"type\":\"string\"}}}},"
     "\"listening\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}},"
     "\"required\":[\"sandbox_id\",\"ports\",\"listening\"]}",
     mcp_tool_port_list, 0, MCP_HINT_READ_ONLY},
    {"port_close", "Close an exposed port",
     "End a port's exposure: its URL is refused from now on and its open connections are cut "
     "(the server in the sandbox keeps running).",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"port\":{\"type\":\"integer\"},\"closed\":{\"type\":\"boolean\"}},"
     "\"required\":[\"sandbox_id\",\"port\",\"closed\"]}",
     mcp_tool_port_close, 0, MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT},
    {"list_languages", "List languages",
     "Languages that execute_code can run, and the image serving each.",
     "{\"type\":\"object\",\"properties\":{\"languages\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"},"
     "\"description\":{\"type\":\"string\"}}}}},\"required\":[\"languages\"]}",
     mcp_tool_list_languages, 0, MCP_HINT_READ_ONLY},
    {"list_secrets", "List secrets",
     "The secrets the operator defined (serve --secret) that sandbox_create {secrets} can grant: "
     "each one's name, the environment variable a sandbox sees it in (holding a placeholder, "
     "never the value), the hosts it is sent to and where in a request it goes. Values are "
     "never shown.",
     "{\"type\":\"object\",\"properties\":{\"secrets\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
     "\"env\":{\"type\":\"string\"},"
     "\"hosts\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"binding\":{\"type\":\"string\"}},"
     "\"required\":[\"name\",\"env\",\"hosts\",\"binding\"]}}},\"required\":[\"secrets\"]}",
     mcp_tool_list_secrets, 0, MCP_HINT_READ_ONLY},
    {"list_images", "List images", "Images in the local store that sandboxes can use.",
     "{\"type\":\"object\",\"properties\":{\"images\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"names\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"digest\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
     "\"languages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}},\"required\":[\"images\"]}",
     mcp_tool_list_images, 0, MCP_HINT_READ_ONLY},
    {"context_fork", "Fork a code context",
     "Make a new code context whose python interpreter is a copy-on-write fork of context_id's "
     "(a made context or the default \"python\"): the same variables, imports and working "
     "directory, in a few milliseconds; from then on neither sees the other's changes. Only "
     "the main thread is copied. random and numpy.random are reseeded unless reseed is false. "
     "A fork counts as a context. javascript, typescript, r and java contexts cannot be forked.",
     "{\"type\":\"object\",\"properties\":{" CONTEXT_PROPS ",\"sandbox_id\":{\"type\":\"string\"},"
     "\"reseeded\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"fork_ms\":{\"type\":\"number\"}},"
     "\"required\":[\"context_id\",\"language\",\"cwd\",\"sandbox_id\",\"forked_from\"]}",
     mcp_tool_context_fork, 0, 0},
    {"request_network", "Ask the user for network access",
     "Ask the user (through the client, MCP elicitation) to let a sandbox made by "
     "sandbox_create reach one more host: rule is one network rule within the operator's "
     "allow-list (a rule outside it is refused without asking). The user answers once (for "
     "the sandbox's next run_command or execute_code only), sandbox (for the sandbox's life) "
     "or no. Fails, changing nothing, when the client cannot ask its user. The result says "
     "what was granted (granted: \"once\", \"sandbox\" or null) and how the user answered.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"rule\":{\"type\":\"string\"},"
     "\"rules\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"granted\":{\"type\":[\"string\",\"null\"],\"enum\":[\"once\",\"sandbox\",null]},"
     "\"answer\":{\"type\":\"string\",\"enum\":[\"accept\",\"decline\",\"cancel\","
     "\"timeout\",\"invalid\"]},"
     "\"decision\":{\"type\":[\"string\",\"null\"]},"
     "\"network_rules\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"message\":{\"type\":\"string\"}},"
     "\"required\":[\"sandbox_id\",\"rule\",\"rules\",\"granted\",\"answer\"]}",
     mcp_tool_request_network, MCP_NEEDS_NET_CEILING, MCP_HINT_NETWORK},
};

const size_t mcp_n_tools = sizeof(mcp_tools) / sizeof(mcp_tools[0]);

bool mcp_tool_offered(const struct mcp_server *cfg, const struct mcp_tool *t)
{
    return !((t->needs & MCP_NEEDS_HOST_DIRS) && cfg->n_host_dirs == 0) &&
           !((t->needs & MCP_NEEDS_COMMITS) && cfg->max_commits == 0) &&
           !((t->needs & MCP_NEEDS_INSTALLS) && cfg->installs == 0) &&
           !((t->needs & MCP_NEEDS_URLS) && cfg->file_urls == NULL) &&
           !((t->needs & MCP_NEEDS_CHECKPOINTS) && cfg->max_checkpoints == 0) &&
           !((t->needs & MCP_NEEDS_NET_CEILING) && cfg->net_ceiling == NULL);
}
