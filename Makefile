# gpurun — build, test and demo.  The README's two commands are `make demo`
# and `make check`; everything else here serves them.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
DESTDIR ?=
CC ?= cc
PKG_CONFIG ?= pkg-config
VERSION := 0.1.0

PKGS := libarchive libcap-ng libseccomp jansson libcurl yaml-0.1
CSTD := -std=gnu11
WARN := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral
CFLAGS ?= -O2 -g
ALL_CFLAGS = $(CSTD) $(WARN) $(CFLAGS) -D_GNU_SOURCE -DGPURUN_VERSION='"$(VERSION)"' \
	-fstack-protector-strong -D_FORTIFY_SOURCE=2 $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
# Every library but libc is linked statically.  Dynamically, the loader
# would map and relocate nine of them on every launch (libarchive alone
# drags in libxml2, ICU and nettle for formats gpurun refuses anyway).
# From the static archives only the tar reader, the four filters, the disk
# writer, SHA-256, libcap-ng, jansson, libyaml and xxHash's XXH64 end up in
# the binary.  libcurl stays a dlopen() on the first pull only, and liblzma
# on the first xz archive (rootfs/unpack/xz.c: its constructor would run on
# every start); libcrypto's CPU probe waits for the first digest
# (rootfs/unpack/digest.c, --wrap).  libseccomp is not linked at all:
# tools/seccomp_gen.c uses it at build time.
ARCHIVE_DEPS = -lacl -lzstd -llz4 -lbz2 -lz
LIBS = -Wl,--wrap=OPENSSL_cpuid_setup -Wl,--as-needed -Wl,-Bstatic -larchive -lcrypto $(ARCHIVE_DEPS) -lcap-ng \
	-ljansson -lyaml -lxxhash -Wl,-Bdynamic -ldl -lpthread

# Full RELRO: the loader binds every libc symbol at start and then makes the
# GOT read-only, so a memory bug in a launcher that runs as root cannot
# redirect a libc call (Debian's own hardening flags for packages).  It
# costs a launch almost nothing: P1 and P2 inherit the bindings P0 made
# instead of each resolving its own.
HARDEN_LDFLAGS := -Wl,-z,relro -Wl,-z,now

# The library's folders, one part each (HACKING.md); tests/layering.sh maps
# each to its floor.  gpu/probe/ is a program of its own (below).
LIB_DIRS := base base/plan ns ns/userns gpu gpu/cdi rootfs rootfs/unpack rootfs/cache rootfs/image rootfs/registry cli
LIB_SRCS := $(sort $(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
LIB_OBJS := $(LIB_SRCS:.c=.o)
# ns/seccomp_bpf.h and ns/plan_sh.h are generated (below): name them, the
# wildcard may not see them yet.
HDRS := $(sort $(wildcard $(addsuffix /*.h,$(LIB_DIRS))) ns/seccomp_bpf.h ns/plan_sh.h)

# Debian packages each target needs; `make deps` installs the missing ones.
DEPS_BUILD := gcc make pkg-config libarchive-dev libcap-ng-dev libseccomp-dev libjansson-dev libssl-dev \
	libacl1-dev libzstd-dev liblz4-dev libbz2-dev liblzma-dev zlib1g-dev nettle-dev libxml2-dev \
	libcurl4-openssl-dev libyaml-dev libisal-dev libxxhash-dev
DEPS_DEMO := busybox-static libc-bin python3 zstd xz-utils bzip2 gzip tar
DEPS_TEST := bats bats-assert bats-support bats-file clang libclang-rt-14-dev llvm clang-format cppcheck \
	shellcheck busybox-static util-linux passwd procps zstd xz-utils bzip2 gzip tar iproute2 libc-bin file python3 \
	umoci skopeo buildah docker-registry openssl apache2-utils curl python3-jwt python3-cryptography \
	debootstrap dpkg-dev uidmap apt dpkg debian-archive-keyring slurmctld slurmd slurm-client munge libslurm-dev \
	strace
DEPS_DOC := go-md2man
DEPS_BENCH := hyperfine bubblewrap crun runc debootstrap libarchive-tools

.PHONY: all gpu-smoke clean install man spank demo check test sanitize fuzz unit bench lint format layering deps deps-test deps-bench

all: gpurun gpu/probe/gpurun-smoke

# The probe `gpurun smoke` runs inside the container (gpu/probe/smoke.c):
# libc and libdl only, so that any glibc image can run it.
LIBEXECDIR ?= $(PREFIX)/libexec
gpu/probe/gpurun-smoke: gpu/probe/smoke.c gpu/probe/report.c gpu/probe/deadline.c gpu/probe/smoke.h gpu/nvml.h
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -D_GNU_SOURCE -fstack-protector-strong -D_FORTIFY_SOURCE=2 \
		$(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) -ldl

# The smoke test on this machine's real GPUs and driver (docs/gpurun.1.md,
# smoke), after the raw driver facts of the real-GPU checklist.
gpu-smoke: gpurun gpu/probe/gpurun-smoke
	@if [ ! -e /proc/driver/nvidia/version ]; then \
		echo "make gpu-smoke: needs a machine with an NVIDIA GPU and its driver loaded" \
			"(no /proc/driver/nvidia/version here); the fake-driver tests are tests/smoke.bats" >&2; exit 1; fi
	cat /proc/driver/nvidia/version
	-nvidia-smi --query-gpu=index,minor_number,pci.bus_id,uuid,name,compute_cap --format=csv
	./gpurun info
	./gpurun smoke --tap
	./gpurun smoke --json
	./gpurun smoke

gpurun: gpurun.o libgpurun.a
	$(CC) $(ALL_CFLAGS) $(HARDEN_LDFLAGS) $(LDFLAGS) -o $@ gpurun.o libgpurun.a $(LIBS)

libgpurun.a: $(LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

%.o: %.c $(HDRS)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The seccomp filter, compiled by libseccomp once, here, instead of on every
# launch (ns/security.c loads the array with one seccomp(2)).
tools/seccomp_gen: tools/seccomp_gen.c
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -D_GNU_SOURCE $(shell $(PKG_CONFIG) --cflags libseccomp 2>/dev/null) \
		-o $@ $< $(shell $(PKG_CONFIG) --libs libseccomp 2>/dev/null)

ns/seccomp_bpf.h: tools/seccomp_gen
	./tools/seccomp_gen >$@.tmp && mv $@.tmp $@

# The printed plan's shell functions, written and shellchecked as shell in
# ns/plan.sh, one C string for ns/show.c: without the file's first
# paragraph, its blank lines and its comments but the "# Helpers" line (the
# comments are for who changes the file; the plan's reader has the lesson).
ns/plan_sh.h: ns/plan.sh
	{ echo '/* generated from ns/plan.sh by make: edit that file */'; echo 'static const char plan_sh[] ='; \
	  sed -e '1,/^$$/d' -e '/^# Helpers/!{/^[[:space:]]*#/d;}' -e 's/   # .*$$//' -e '/^$$/d' $< | \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/^/"/' -e 's/$$/\\n"/'; echo ';'; } >$@.tmp && mv $@.tmp $@

# The man page is written in docs/gpurun.1.md (its synopsis, run options and
# exit status generated from `gpurun --help` by tools/gen-options.py) and
# rendered here; the markers of those generated parts are not for roff.
man: docs/gpurun.1

docs/gpurun.1: docs/gpurun.1.md
	@sh tests/deps.sh $(DEPS_DOC)
	sed '/^<!-- generated:/d' $< | go-md2man -out $@.tmp && mv $@.tmp $@

install: gpurun gpu/probe/gpurun-smoke docs/gpurun.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(BASHCOMPDIR)
	install -m 0755 gpurun $(DESTDIR)$(BINDIR)/gpurun
	install -d $(DESTDIR)$(LIBEXECDIR)/gpurun
	install -m 0755 gpu/probe/gpurun-smoke $(DESTDIR)$(LIBEXECDIR)/gpurun/gpurun-smoke
	install -m 0644 docs/gpurun.1 $(DESTDIR)$(MANDIR)/man1/gpurun.1
	install -m 0644 contrib/gpurun.bash-completion $(DESTDIR)$(BASHCOMPDIR)/gpurun
	if [ -f spank/gpurun.so ]; then install -d $(DESTDIR)$(SPANKDIR) && \
		install -m 0755 spank/gpurun.so $(DESTDIR)$(SPANKDIR)/gpurun.so; fi

# The Slurm SPANK plugin (srun --container-image=...; docs/slurm.md), built
# against the installed Slurm's headers (libslurm-dev): a plugin must match
# the Slurm release it runs under, so the plain build never makes it.
SPANKDIR ?= $(PREFIX)/lib/slurm
spank: spank/gpurun.so
spank/gpurun.so: spank/gpurun_spank.c
	$(CC) $(CSTD) $(WARN) $(CFLAGS) -D_GNU_SOURCE -DGPURUN_BIN='"$(BINDIR)/gpurun"' -fPIC -shared \
		-fstack-protector-strong -D_FORTIFY_SOURCE=2 -o $@ $<

clean:
	rm -f gpurun gpurun.o libgpurun.a $(LIB_OBJS) tools/seccomp_gen ns/seccomp_bpf.h ns/plan_sh.h docs/gpurun.1 spank/gpurun.so \
		gpu/probe/gpurun-smoke
	rm -rf tests/build

deps:
	@sh tests/deps.sh $(DEPS_BUILD) $(DEPS_DEMO)
deps-test:
	@sh tests/deps.sh $(DEPS_BUILD) $(DEPS_TEST) $(DEPS_DOC)
deps-bench:
	@sh tests/deps.sh $(DEPS_BUILD) $(DEPS_TEST) $(DEPS_DOC) $(DEPS_BENCH)

# The main job on a bundled demo image: builds the image offline from
# Debian's busybox-static, then runs gpurun in it (and the GPU demo against
# the real driver, or the test suite's fake driver when there is no GPU).
demo: deps
	$(MAKE) gpurun
	sh examples/demo.sh

# Every test: the layering check, the lint, C units under sanitizers and the
# fuzz corpora, then the bats suites as root and as an unprivileged user.  The
# builds are one parallel make, so that the serial steps (a link, the spank
# plugin, the corpus replay) overlap with compiles instead of leaving a CPU
# idle.
NPROC := $(shell nproc 2>/dev/null || echo 2)
check: deps-test
	$(MAKE) -j$(NPROC) all spank sanitize unit
	$(MAKE) layering lint
	bash tests/run-bats.sh

test: check

# Fuzz targets (libFuzzer) and the parsers' unit tests, built with clang under
# ASan/UBSan.  `make sanitize` (part of `make check`) replays each target's
# seed corpus under the sanitizers; `make fuzz` fuzzes each target for
# FUZZ_SECONDS besides (`make fuzz FUZZ_SECONDS=600` for longer).
FUZZ_SECONDS ?= 20
SAN_FLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,tests/build/%,$(FUZZ_SRCS))

SAN_CFLAGS = $(CSTD) -D_GNU_SOURCE -DGPURUN_VERSION='"$(VERSION)"' $(SAN_FLAGS) \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
SAN_OBJS := $(patsubst %.c,tests/build/san/%.o,$(LIB_SRCS))
# Keep them between runs: they are intermediates of the fuzz_% pattern rule.
.SECONDARY: $(SAN_OBJS)

# The library once, instrumented for coverage and sanitizers; each fuzz
# target then links against it.
tests/build/san/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	clang $(SAN_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

tests/build/fuzz_%: tests/fuzz/fuzz_%.c $(SAN_OBJS)
	clang $(SAN_CFLAGS) -fsanitize=fuzzer -o $@ $< $(SAN_OBJS) $(LIBS)

# C unit tests of pure library code (tests/unit/*_test.c), under the same
# sanitizers; tests/unit.bats runs their cases.
UNIT_SRCS := $(wildcard tests/unit/*_test.c)
UNIT_BINS := $(patsubst tests/unit/%_test.c,tests/build/unit_%,$(UNIT_SRCS))

tests/build/unit_%: tests/unit/%_test.c tests/unit/unit.h $(SAN_OBJS)
	clang $(SAN_CFLAGS) -o $@ $< $(SAN_OBJS) $(LIBS)

unit: $(UNIT_BINS)

sanitize: $(FUZZ_BINS)
	@sh tests/fuzz/run.sh 0 $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	@sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BINS)

bench: deps-bench
	$(MAKE) gpurun
	bash tests/bench/run.sh

# The layers (base < plan < rootfs, gpu < ns < gpurun.c) and no circle of
# files: from the #include lines and from the objects' symbols.
layering: gpurun
	bash tests/layering.sh

# The plan's shell functions pass shellcheck.  Every C file of the tree but
# the generated headers, in the layout
# .clang-format describes: `make lint` fails on one that differs (besides
# cppcheck's findings), `make format` rewrites them in place.
FORMAT_SRCS := $(filter-out ns/seccomp_bpf.h ns/plan_sh.h tests/build/%,$(sort $(wildcard $(addsuffix /*.[ch],$(LIB_DIRS)) \
	tools/*.c gpu/probe/*.[ch] spank/*.[ch]) $(wildcard tests/*.c tests/*/*.c))) gpurun.c
CLANG_FORMAT ?= clang-format

lint:
	shellcheck -s sh ns/plan.sh
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance \
		--std=c11 --inline-suppr -D_GNU_SOURCE gpurun.c cli base ns gpu rootfs
	$(CLANG_FORMAT) --dry-run --Werror $(FORMAT_SRCS)

format:
	$(CLANG_FORMAT) -i $(FORMAT_SRCS)
