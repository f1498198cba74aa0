#!/usr/bin/env bash
# tap-stdio.sh LOG [VAR=VALUE...] CMD...: runs CMD (an MCP server over stdio)
# with what the client writes to its stdin copied to LOG, for the suite's
# era check (tap.mjs), and with the VAR=VALUE words in its environment (the
# sanitizer settings a client would not pass on: common.mjs).  CMD is
# exec'd, so the client's signals reach it directly; tee ends when the
# client closes the pipe or CMD is gone.
log=$1
shift
exec env "$@" < <(exec tee -a "$log")
