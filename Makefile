# nsbox: one library (common/ oci/ images/ runtime/ boxes/) and thin front ends.
# `make` builds build/nsbox; `make test` runs every test; `make deps`
# installs the Debian packages the build and the tests need.

CC       ?= cc
BUILD    ?= build
PKGS     := jansson libarchive libcrypto libseccomp libcap libmnl zlib libzstd libmicrohttpd inih
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# Linked statically where Debian ships the archive: nsbox starts on every
# `run` and `exec`, and the dynamic loader spent 2.4 ms there (libarchive
# alone drags in libxml2, ICU and libstdc++).  Only the objects nsbox uses
# are linked.  libmnl has no static archive; libc stays shared.
# libmicrohttpd is not linked at all: `serve --http` dlopens it
# (mcp/http/core.c), so gnutls never loads for run and exec.
STATIC_LIBS := -larchive -lcrypto -ljansson -lseccomp -lcap -lz -lzstd -linih
DYNAMIC_LIBS := -lmnl
PKG_LIBS   := -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic $(DYNAMIC_LIBS)

# CFLAGS/LDFLAGS are yours to set (optimization, sanitizers); the flags
# nsbox needs, warnings and hardening are always added.
CFLAGS   ?= -O2 -g
NSBOX_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -Wshadow -Wformat=2 \
            -Wno-unused-parameter -Wno-format-truncation -fstack-protector-strong -fPIE \
            -D_FORTIFY_SOURCE=2 -D_GNU_SOURCE -pthread $(PKG_CFLAGS)
NSBOX_LDFLAGS := -pie -Wl,-z,relro,-z,now -pthread
LDLIBS   += $(PKG_LIBS)

LIB_SRCS := $(wildcard common/*.c oci/*.c images/*.c runtime/*.c runtime/egress/*.c boxes/*.c)
CLI_SRCS := $(wildcard cli/*.c mcp/*.c mcp/*/*.c)
CLI_ASM  := cli/profile.S
UNIT_SRCS := $(wildcard tests/unit/*.c)
# nsbox-tls, the egress broker's TLS terminator (runtime/egress/tls/): a
# binary of its own, the only one linked with libssl (dynamically), so
# nsbox itself never carries TLS or EVP code.
TLS_SRCS := $(wildcard runtime/egress/tls/*.c)
TLS_OBJS := $(TLS_SRCS:%.c=$(BUILD)/%.o)

LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
CLI_OBJS  := $(CLI_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/cli/profile.o $(BUILD)/mcp/interp/embedded.o
UNIT_OBJS := $(UNIT_SRCS:%.c=$(BUILD)/%.o)

.PHONY: all install test test-plain test-asan unit-test load bench deps fixtures default-image ci-image container-image asan asan-planted fuzz fuzz-build fuzz-long clean format format-check docs

all: $(BUILD)/nsbox $(BUILD)/nsbox-tls $(BUILD)/nsbox-newidmap

$(BUILD)/libnsbox.a: $(LIB_OBJS)
	$(AR) rcs $@ $^

$(BUILD)/nsbox: $(CLI_OBJS) $(BUILD)/libnsbox.a
	$(CC) $(NSBOX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The pure objects it needs (rules, the request engine, secrets, base64)
# come from libnsbox.a.
$(BUILD)/nsbox-tls: $(TLS_OBJS) $(BUILD)/libnsbox.a
	$(CC) $(NSBOX_LDFLAGS) $(LDFLAGS) -o $@ $^ -Wl,-Bstatic -ljansson -lcap -Wl,-Bdynamic -lssl -lcrypto

# nsbox-newidmap: newuidmap/newgidmap inside a nested sandbox
# (runtime/nested/newidmap.c), static so it runs in any image, and never
# built with the sanitizers (a static binary cannot carry them).
$(BUILD)/nsbox-newidmap: runtime/nested/newidmap.c
	@mkdir -p $(dir $@)
	cc -std=gnu11 -O2 -Wall -Wextra -Werror -static -o $@ $<

# nsbox in PREFIX/bin; nsbox-tls where the broker looks for it when it is
# not next to nsbox (PREFIX/libexec/nsbox/).
PREFIX ?= /usr/local
install: all
	install -D -m 0755 $(BUILD)/nsbox $(DESTDIR)$(PREFIX)/bin/nsbox
	install -D -m 0755 $(BUILD)/nsbox-tls $(DESTDIR)$(PREFIX)/libexec/nsbox/nsbox-tls
	install -D -m 0755 $(BUILD)/nsbox-newidmap $(DESTDIR)$(PREFIX)/libexec/nsbox/nsbox-newidmap

# The tests also write archives (libarchive's writer wants nettle, lz4, ...):
# shared libraries there.
# The MCP tool arguments (pure: no server, store or sandbox) are tested
# too, and the tool table (mcp/tools/table.c, which names every tool, so
# the MCP objects but the transports and config.c come along, as for
# fuzz_tools).
MCP_CORE_SRCS := $(filter-out mcp/transport_%.c mcp/config.c mcp/server_open.c mcp/http/%,$(wildcard mcp/*.c mcp/*/*.c))
UNIT_MCP_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(MCP_CORE_SRCS) mcp/http/reqmeta.c) \
	$(BUILD)/mcp/interp/embedded.o
$(BUILD)/unit-tests: $(UNIT_OBJS) $(UNIT_MCP_OBJS) $(BUILD)/libnsbox.a
	$(CC) $(NSBOX_LDFLAGS) $(LDFLAGS) -o $@ $^ $(shell pkg-config --libs $(PKGS))

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(NSBOX_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# `nsbox version` names the commit built from ("unknown" from a tarball:
# no .git here, and a surrounding repository's commit is not ours).  The
# stamp file changes only with the commit, so only cli/version.o rebuilds.
GIT_COMMIT := $(shell test -e .git && git rev-parse --short=12 HEAD 2>/dev/null)
GIT_COMMIT := $(if $(GIT_COMMIT),$(GIT_COMMIT)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty),unknown)
$(shell mkdir -p $(BUILD) && (echo '$(GIT_COMMIT)' | cmp -s - $(BUILD)/git-commit || echo '$(GIT_COMMIT)' > $(BUILD)/git-commit))
$(BUILD)/cli/version.o: $(BUILD)/git-commit
$(BUILD)/cli/version.o: NSBOX_CFLAGS += -DNSBOX_GIT_COMMIT='"$(GIT_COMMIT)"'

$(BUILD)/cli/profile.o: cli/profile.S seccomp-profiles/default.json seccomp-profiles/nested.json \
		$(BUILD)/nested-profile.ok
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

# seccomp-profiles/nested.json is generated (and committed): the build
# fails when it is not what the generator makes of default.json and
# nested-additions.json (NESTED_PROFILE_CMD > seccomp-profiles/nested.json
# after a change).
NESTED_PROFILE_CMD = python3 seccomp-profiles/merge.py seccomp-profiles/default.json \
	seccomp-profiles/nested-additions.json
$(BUILD)/nested-profile.ok: seccomp-profiles/merge.py seccomp-profiles/default.json \
		seccomp-profiles/nested-additions.json seccomp-profiles/nested.json
	@mkdir -p $(dir $@)
	@$(NESTED_PROFILE_CMD) | cmp -s - seccomp-profiles/nested.json || \
		{ echo "seccomp-profiles/nested.json is stale: $(NESTED_PROFILE_CMD) > seccomp-profiles/nested.json" >&2; exit 1; }
	@touch $@

$(BUILD)/mcp/interp/embedded.o: mcp/interp/embedded.S $(wildcard mcp/interp/drivers/*)
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

# libFuzzer targets (tests/fuzz/fuzz_NAME.c -> build-fuzz/fuzz-NAME), built
# with clang, ASan and UBSan.  `make fuzz` runs each for FUZZ_SECONDS,
# FUZZ_JOBS targets at a time, after replaying its seed corpus
# (tests/fuzz/corpus/NAME), against the floors in tests/fuzz/floors.tsv
# (tests/fuzz/run.sh); `make fuzz-long` for 30 min each.
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_CFLAGS  := -O1 -g -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -Wno-unknown-warning-option -Wno-format-nonliteral
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 2
# The MCP objects but the transports and the server's construction:
# fuzz_tools walks the tool table (mcp/tools/table.c), whose entries point
# at every tool.  Of mcp/http/ only the pure parts (fuzz_http,
# fuzz_httpbody), none of the libmicrohttpd code.
FUZZ_OBJS    := $(patsubst %.c,$(BUILD)/%.o,$(MCP_CORE_SRCS) mcp/http/policy.c mcp/http/body.c \
	mcp/http/reqmeta.c) \
                $(BUILD)/mcp/interp/embedded.o

fuzz-build:
	$(MAKE) BUILD=build-fuzz CC=clang CFLAGS="$(FUZZ_CFLAGS)" \
		$(FUZZ_TARGETS:%=build-fuzz/fuzz-%)

$(BUILD)/fuzz-%: $(BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_OBJS) $(BUILD)/libnsbox.a
	$(CC) -fsanitize=fuzzer,address,undefined $(NSBOX_LDFLAGS) -o $@ $^ $(LDLIBS)

# fuzz_tools's checks that hold for every tool are a file of their own.
$(BUILD)/fuzz-tools: $(BUILD)/tests/fuzz/tools_checks.o

# Keep the objects (make would delete them as intermediates and rebuild).
.SECONDARY: $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/fuzz_%.o) $(BUILD)/tests/fuzz/tools_checks.o

fuzz: fuzz-build
	@FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-long: fuzz-build
	@FUZZ_JOBS=$(FUZZ_JOBS) tests/fuzz/run.sh 1800 $(FUZZ_TARGETS)

-include $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(UNIT_OBJS:.o=.d) $(TLS_OBJS:.o=.d)

# Every test once (tests/run.sh, the suites of tests/suites.tsv, side by
# side): each suite under the ASan+UBSan build where it tolerates it,
# uninstrumented where not, plus a smoke run of the production binary; ends
# with "N passed, N failed".  test-plain: every suite uninstrumented;
# test-asan: the ASan suites alone (docs/testing.md).
test: $(BUILD)/nsbox $(BUILD)/nsbox-tls $(BUILD)/unit-tests asan asan-planted
	@tests/run.sh

test-plain: $(BUILD)/nsbox $(BUILD)/nsbox-tls $(BUILD)/unit-tests
	@NSBOX_TEST_MODE=plain tests/run.sh

unit-test: $(BUILD)/unit-tests
	@$(BUILD)/unit-tests

# The HTTP load suite for longer than `make test` runs it (45 s).
LOAD_SECONDS ?= 300
load: $(BUILD)/nsbox
	@LOAD_SECONDS=$(LOAD_SECONDS) TESTS=load_http tests/run.sh

fixtures:
	@tests/fixtures/build.sh

# docs/cli.md, generated from the command table (cli/commands.c).
docs: $(BUILD)/nsbox
	$(BUILD)/nsbox help --markdown > docs/cli.md

# The python image nsbox uses by default, built locally from Debian packages.
default-image: $(BUILD)/nsbox
	@images/default-image.sh $(BUILD)/nsbox

# The image for nested sandboxes (podman, buildah, compose, git, gcc), built
# locally from Debian packages and cached (docs/nested.md).
ci-image: $(BUILD)/nsbox
	@images/ci-image.sh $(BUILD)/nsbox

# A container image of nsbox itself (OCI layout in build/container/oci, tag
# latest) with the default image preloaded; CONTAINER_PRELOAD=OCI_DIR[:TAG]
# preloads another (docs/container.md).
CONTAINER_PRELOAD ?=
container-image: $(BUILD)/nsbox $(BUILD)/nsbox-tls
	@deploy/container/build.sh --nsbox $(BUILD)/nsbox --out $(BUILD)/container/oci \
		$(if $(CONTAINER_PRELOAD),--preload $(CONTAINER_PRELOAD))

bench: $(BUILD)/nsbox
	@tests/bench/run.sh

deps:
	@tests/deps.sh

# clang-format 14 with the checked-in .clang-format.  format-check changes
# nothing; it lists each file that would change, with how many of its lines,
# and fails if there is any (details: clang-format --dry-run FILE).
CLANG_FORMAT ?= clang-format
FORMAT_SRCS := $(LIB_SRCS) $(CLI_SRCS) $(UNIT_SRCS) $(TLS_SRCS) $(wildcard */*.h mcp/*/*.h runtime/egress/*.h runtime/egress/tls/*.h tests/unit/*.h)

format:
	$(CLANG_FORMAT) -i --style=file $(FORMAT_SRCS)

format-check:
	@command -v $(CLANG_FORMAT) >/dev/null || { echo "no $(CLANG_FORMAT)"; exit 2; }; \
	total=0; for f in $(FORMAT_SRCS); do \
		out=$$($(CLANG_FORMAT) --style=file "$$f") || exit 2; \
		n=$$(printf '%s\n' "$$out" | diff "$$f" - | grep -c '^<'); \
		[ "$$n" = 0 ] || echo "$$f: $$n lines would change"; \
		total=$$((total + n)); \
	done; \
	echo "format-check: $$total lines would change"; [ $$total = 0 ]

# An ASan+UBSan build in build-asan/ (the test scripts take NSBOX=...).
# clang: its one runtime writes UBSan reports to log_path too (GCC's
# separate libubsan ignores it), and the runtime is linked in, so copies of
# the binary (rootless tests, the VM) need nothing.  clang 19, not Debian
# 12's default 14: from LLVM 18 on ASan locks its allocator around fork(),
# as glibc's malloc does.  clang 14's does not, so a child forked from the
# MCP server (the helper that clones a sandbox's init) could inherit an
# allocator lock another thread held, and init waited on it forever at its
# first allocation of that size (CI on 2026-11-29: sandbox_create never
# answered, a drain never ended).  UBSan reports are fatal even where
# UBSAN_OPTIONS does not reach (env -i).
ASAN_CC ?= clang-19
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
               -fno-omit-frame-pointer -Wno-unknown-warning-option -Wno-format-nonliteral
# runtime/sanitizer.c gives that build its default options (exit status 99
# under `env -i` too) and the report fd of init and the file builtins.
asan:
	$(MAKE) BUILD=build-asan CC=$(ASAN_CC) CFLAGS="$(ASAN_CFLAGS)" \
		LDFLAGS="-fsanitize=address,undefined" build-asan/nsbox build-asan/nsbox-tls build-asan/unit-tests \
		build-asan/nsbox-newidmap

# build-planted/nsbox: that build with the bugs tests/integration/sanitizers.sh
# plants (NSBOX_PLANT=NAME fires one; common/plant.h), never in any
# other build.  Only the files with a plant are compiled again; the rest
# are build-asan's objects.
PLANT_SRCS := runtime/init.c runtime/files_builtin.c common/plant.c cli/util.c
PLANT_OBJS := $(PLANT_SRCS:%.c=build-planted/%.o)
asan-planted: asan
	$(MAKE) BUILD=build-asan CC=$(ASAN_CC) CFLAGS="$(ASAN_CFLAGS)" \
		LDFLAGS="-fsanitize=address,undefined" build-planted/nsbox

build-planted/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(NSBOX_CFLAGS) $(CFLAGS) -DNSBOX_SANITIZER_PLANT -MMD -MP -c -o $@ $<

build-planted/nsbox: $(PLANT_OBJS) $(CLI_OBJS) $(BUILD)/libnsbox.a
	$(CC) $(NSBOX_LDFLAGS) $(LDFLAGS) -o $@ $(PLANT_OBJS) \
		$(filter-out $(PLANT_SRCS:%.c=$(BUILD)/%.o),$(CLI_OBJS)) $(BUILD)/libnsbox.a $(LDLIBS)

-include $(PLANT_OBJS:.o=.d)

# Every suite whose mode is asan (tests/suites.tsv) against that build; any
# sanitizer report, even from a child whose exit status nobody reads, fails
# its suite (tests/run.sh).
test-asan: $(BUILD)/nsbox $(BUILD)/nsbox-tls asan asan-planted
	@NSBOX_TEST_MODE=asan tests/run.sh

clean:
	rm -rf $(BUILD) build-asan build-planted build-fuzz
