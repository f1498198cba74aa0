/* The tool table: names, descriptions and JSON schemas.  One entry per
 * tool; the implementations are in tools_*.c. */
#include "server.h"

#define RESULT_SCHEMA                                                                    \
    "{\"type\":\"object\",\"properties\":{"                                              \
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"oom\",\"signaled\"]}," \
    "\"exit_code\":{\"type\":\"integer\"},\"signal\":{\"type\":\"integer\"},"            \
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                 \
    "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"}," \
    "\"timed_out\":{\"type\":\"boolean\"},\"oom_killed\":{\"type\":\"boolean\"},"        \
    "\"wall_ms\":{\"type\":\"integer\"},\"cpu_ms\":{\"type\":\"integer\"},"              \
    "\"memory_peak_bytes\":{\"type\":\"integer\"},"                                      \
    "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}}},"                   \
    "\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\",\"timed_out\",\"oom_killed\"]}"

#define LIMIT_PROPS                                                                      \
    "\"memory_mb\":{\"type\":\"number\",\"description\":\"memory limit in MiB\"},"       \
    "\"cpus\":{\"type\":\"number\",\"description\":\"CPU limit, e.g. 0.5\"},"            \
    "\"pids\":{\"type\":\"integer\",\"description\":\"most processes and threads\"},"    \
    "\"timeout_s\":{\"type\":\"number\",\"description\":\"wall-clock limit in seconds\"}"

#define LIMITS_OUT                                                                       \
    "{\"type\":\"object\",\"properties\":{\"memory_mb\":{\"type\":\"number\"},"           \
    "\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"                     \
    "\"timeout_s\":{\"type\":\"number\"},\"enforced\":{\"type\":\"string\"}}}"

const struct mcp_tool mcp_tools[] = {
    {"sandbox_create", "Create a sandbox",
     "Start a long-lived sandbox from an image (by image reference, or by language). Files "
     "persist in it between calls (working directory /workspace). Returns its id and the "
     "limits in force.",
     "{\"type\":\"object\",\"properties\":{"
     "\"image\":{\"type\":\"string\",\"description\":\"image reference (see list_images)\"},"
     "\"language\":{\"type\":\"string\",\"description\":\"pick the image serving this language\"},"
     LIMIT_PROPS ","
     "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"}},"
     "\"workdir\":{\"type\":\"string\",\"description\":\"absolute path, default /workspace\"}},"
     "\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"},\"limits\":" LIMITS_OUT "},"
     "\"required\":[\"sandbox_id\",\"image\",\"digest\",\"limits\"]}",
     mcp_tool_sandbox_create},
    {"sandbox_list", "List sandboxes", "The sandboxes this session created and still runs.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"},"
     "\"created\":{\"type\":\"integer\"},\"limits\":" LIMITS_OUT "}}}},"
     "\"required\":[\"sandboxes\"]}",
     mcp_tool_sandbox_list},
    {"sandbox_stop", "Stop a sandbox",
     "Kill every process in a sandbox of this session and remove it with its files.",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"}},"
     "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
     "\"stopped\":{\"type\":\"boolean\"}},\"required\":[\"sandbox_id\",\"stopped\"]}",
     mcp_tool_sandbox_stop},
    {"execute_code", "Execute code",
     "Run a program in a sandbox: in a fresh one for the language (removed afterwards) or, "
     "with sandbox_id, in one made by sandbox_create. A program that fails is a normal "
     "result (status \"error\" and its exit code), not a tool error.",
     "{\"type\":\"object\",\"properties\":{"
     "\"code\":{\"type\":\"string\",\"description\":\"the program's source\"},"
     "\"language\":{\"type\":\"string\",\"default\":\"python\","
     "\"description\":\"python, sh, bash, javascript, ruby or perl (see list_languages)\"},"
     "\"sandbox_id\":{\"type\":\"string\"},\"stdin\":{\"type\":\"string\"}," LIMIT_PROPS "},"
     "\"required\":[\"code\"],\"additionalProperties\":false}",
     RESULT_SCHEMA, mcp_tool_execute_code},
    {"run_command", "Run a shell command",
     "Run a command line with /bin/sh -c, in a fresh sandbox or, with sandbox_id, in a "
     "sandbox made by sandbox_create.",
     "{\"type\":\"object\",\"properties\":{"
     "\"command\":{\"type\":\"string\"},\"sandbox_id\":{\"type\":\"string\"},"
     "\"stdin\":{\"type\":\"string\"},"
     "\"workdir\":{\"type\":\"string\",\"description\":\"absolute path inside the sandbox\"},"
     LIMIT_PROPS "},\"required\":[\"command\"],\"additionalProperties\":false}",
     RESULT_SCHEMA, mcp_tool_run_command},
    {"list_languages", "List languages",
     "Languages that execute_code can run, and the image serving each.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"languages\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"language\":{\"type\":\"string\"},"
     "\"image\":{\"type\":\"string\"},\"digest\":{\"type\":\"string\"}}}}},"
     "\"required\":[\"languages\"]}",
     mcp_tool_list_languages},
    {"list_images", "List images", "Images in the local store that sandboxes can use.",
     "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"images\":{\"type\":\"array\",\"items\":{"
     "\"type\":\"object\",\"properties\":{\"names\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
     "\"digest\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
     "\"languages\":{\"type\":\"string\"}}}}},\"required\":[\"images\"]}",
     mcp_tool_list_images},
};

const size_t mcp_n_tools = sizeof(mcp_tools) / sizeof(mcp_tools[0]);
