# SPDX-License-Identifier: GPL-2.0
#
# rdmaxfer - top-level Makefile.
#
#   make              build kmod/rdmaxfer.ko, the CLI, the selftests and the
#                     course's verbs programs (tools/labs/)
#                     (the module for the kernel the QEMU rig boots)
#   make KDIR=/lib/modules/$(uname -r)/build module cli
#                     build the module and CLI for this host instead
#   make check        install what is missing, build, lint, boot the guest
#                     and run the selftests; ends with "N passed, N failed, N skipped"
#   make check KERNEL=debug
#                     the same on the debug guest kernel (KASAN, lockdep, kmemleak,
#                     UBSAN, fault injection), built from linux-source-6.1 on first
#                     use (~30 min) and cached; no lint (the stock run lints)
#   make check KERNEL=6.12
#                     the same on the newest 6.12 of bookworm-backports, fetched
#                     with its headers into ~/.cache/rdmaxfer on first use
#   make check KERNEL=sid
#                     the same on the newest kernel of Debian unstable (7.2 today);
#                     the module is built in a sid chroot (mmdebstrap, cached), the
#                     CLI and selftests here
#   make check PROVIDER=siw
#                     the same with Soft-iWARP (siw) instead of Soft-RoCE (rxe) as the
#                     RDMA device of the guests and of every test (with KERNEL= too;
#                     siw.ko is built from Debian's source where the kernel lacks it)
#   make check LINT=0 any of the above without its lint (.ci/run's siw run: lint does
#                     not depend on the provider, and the stock run lints)
#   make check-all    stock, debug, 6.12, sid, the package test and siw, one after the
#                     other (what CI runs part of: see Documentation/testing.md)
#   make demo         install what is missing, build, boot the guest and show
#                     what the module sees
#   make shell        an interactive guest console with everything loaded
#   make fuzz [FUZZ_SECS=300] [FUZZ_SEED=N] [KERNEL=debug]
#                     the ioctl fuzzer in the guest for as long as asked, then
#                     the kernel log check (selftests/rdmaxfer/fuzz_ioctl.c)
#   make bench        boot the guest, run rdmaxfer and perftest alternately on
#                     rxe0 and print the ratio and CPU tables; then the same
#                     between the two guests of a pair (tools/vm/guest/bench.sh;
#                     BENCH_LAYOUT=single|pair: only one of them)
#   make labs         run the course labs in the guest and plot them
#                     (Documentation/labs/, PNGs in build/labs/)
#   make lint         W=1 -Werror, sparse C=2, checkpatch --strict, kernel-doc,
#                     the uapi header alone with -pedantic, shellcheck
#   make setup        install packages and fetch the guest kernel
#   make deb          build the Debian packages rdmaxfer-dkms and rdmaxfer into
#                     build/deb/ (tools/packaging/deb.sh)
#   make pkgtest      install them in a throw-away Debian 12 chroot: DKMS builds
#                     for 6.1 and 6.12, man pages, udev rule, then the guest runs
#                     the DKMS-built module (tools/packaging/pkgtest.sh)
#   make install      install the module (modules_install), the CLI, the man
#                     pages and the udev rule (/dev/rdmaxfer for group rdma)
#
# Build output goes to build/ (and the module to kmod/, as kbuild wants).

RIG		:= tools/vm/rig.sh
# The guest kernel: stock (Debian 12's 6.1), debug (tools/vm/debug-kernel.sh),
# 6.12 (bookworm-backports) or sid (Debian unstable's newest).
KERNEL		?= stock
export RIG_KERNEL := $(KERNEL)
# (a $(shell) does not see exported variables: say RIG_KERNEL here)
# The RDMA provider of the guests and tests: rxe (Soft-RoCE) or siw (Soft-iWARP).
PROVIDER	?= rxe
export RIG_PROVIDER := $(PROVIDER)
KDIR		?= $(shell RIG_KERNEL=$(KERNEL) $(RIG) kdir 2>/dev/null)
# Where kbuild runs: sid's headers need sid's compiler, so in its chroot; KDIR is then
# a path inside it.
KRUN		:= $(if $(filter sid,$(KERNEL)),$(RIG) krun)
BUILD		:= build
KSRC_TAR	?= $(lastword $(sort $(wildcard /usr/src/linux-source-*.tar.xz)))
KSRC		:= $(BUILD)/ksrc
KSFT_INC	:= $(CURDIR)/$(KSRC)/tools/testing/selftests
STAGE		:= $(BUILD)/stage$(if $(filter-out stock,$(KERNEL)),-$(KERNEL))
export RDMAXFER_STAGE := $(CURDIR)/$(STAGE)
PREFIX		?= /usr/local
CC		?= cc

KMOD_SRCS	:= $(filter-out %.mod.c,$(wildcard kmod/*.c kmod/*.h))
UAPI		:= uapi/linux/rdmaxfer.h
SHELL_SCRIPTS	:= $(wildcard selftests/rdmaxfer/*.sh selftests/rdmaxfer/pair/*.sh tools/vm/*.sh tools/vm/guest/* tools/vm/plots/*.sh) \
		   $(wildcard tools/packaging/*.sh tools/packaging/debian/*.postinst)

all: module cli selftests labprogs

check-kdir:
	@test -n "$(KDIR)" && $(KRUN) test -d "$(KDIR)" || { \
		echo "rdmaxfer: no kernel headers (KDIR='$(KDIR)'): run 'make setup'," \
		     "or pass KDIR=/lib/modules/\$$(uname -r)/build" >&2; exit 1; }

module: check-kdir
	$(KRUN) $(MAKE) -C $(KDIR) M=$(CURDIR) modules

cli:
	$(MAKE) -C tools/rdmaxfer O=$(CURDIR)/$(BUILD)/bin

# The course's verbs programs (tools/labs/*.c): /opt/rdmaxfer/labs/ in the guest.
labprogs:
	$(MAKE) -C tools/labs O=$(CURDIR)/$(BUILD)/labs-bin

# kselftest_harness.h, kselftest.h, kselftest's runner (run_kselftest.sh,
# kselftest/runner.sh) and checkpatch come from Debian's linux-source
# package, extracted here at build time.
$(KSRC)/.stamp: $(KSRC_TAR) Makefile
	@test -n "$(KSRC_TAR)" || { echo "rdmaxfer: no /usr/src/linux-source-*.tar.xz: run 'make setup'" >&2; exit 1; }
	rm -rf $(KSRC) && mkdir -p $(KSRC)
	tar -xJf $(KSRC_TAR) -C $(KSRC) --strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest.h' \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/tools/testing/selftests/kselftest/runner.sh' \
		'*/tools/testing/selftests/kselftest/prefix.pl' \
		'*/tools/testing/selftests/run_kselftest.sh' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	touch $@

selftests: $(KSRC)/.stamp
	$(MAKE) -C selftests/rdmaxfer KSFT_INC=$(KSFT_INC) O=$(CURDIR)/$(BUILD)/selftests

# What the rig copies into the guest as /opt/rdmaxfer.
stage: all
	rm -rf $(STAGE)
	mkdir -p $(STAGE)/bin
	cp kmod/rdmaxfer.ko $(STAGE)/
	cp $(BUILD)/bin/rdmaxfer $(STAGE)/bin/
	cp -r $(BUILD)/labs-bin $(STAGE)/labs
	$(MAKE) -C selftests/rdmaxfer KSFT_INC=$(KSFT_INC) O=$(CURDIR)/$(BUILD)/selftests \
		install INSTALL_PATH=$(CURDIR)/$(STAGE)/selftests

# $(call checkpatch,SCRIPT[,RUNNER]): checkpatch --strict on the module and the uapi
# header; TRACE_EVENT()'s layout (TP_* arguments one per line) is the kernel's own.
checkpatch = $(2) $(1) --no-tree --strict --quiet --show-types -f \
		$(filter-out kmod/trace.h,$(KMOD_SRCS)) $(UAPI) && \
	$(2) $(1) --no-tree --strict --quiet --show-types \
		--ignore PARENTHESIS_ALIGNMENT,OPEN_ENDED_LINE -f kmod/trace.h

# The module against KERNEL's tree: W=1 -Werror, sparse (which must have run: a kbuild
# that finds no usable sparse only says so in a make warning; quiet=quiet_ keeps kbuild's
# CHECK lines under `make -s`, which would otherwise hide them) and kernel-doc; in a build
# chroot also the checkpatch of that kernel's source (lint runs 6.1's).
lint-kernel: check-kdir
	@mkdir -p $(BUILD)
	$(KRUN) $(MAKE) -C $(KDIR) M=$(CURDIR) W=1 KCFLAGS=-Werror modules
	$(KRUN) $(MAKE) -C $(KDIR) M=$(CURDIR) C=2 quiet=quiet_ modules 2>&1 | tee $(BUILD)/sparse.log
	@! grep -E 'warning:|error:|not available' $(BUILD)/sparse.log
	@grep -q '^ *CHECK ' $(BUILD)/sparse.log || { echo "rdmaxfer: sparse did not run" >&2; exit 1; }
	$(KRUN) $(KDIR)/scripts/kernel-doc -none $(KMOD_SRCS) $(UAPI) 2>&1 | tee $(BUILD)/kernel-doc.log
	@test ! -s $(BUILD)/kernel-doc.log
	$(if $(KRUN),$(call checkpatch,/opt/linux-source/scripts/checkpatch.pl,$(KRUN)))

# Everything: lint-kernel, checkpatch, the uapi header alone, the CLI and selftests with
# -Werror, shellcheck.
lint: lint-kernel $(KSRC)/.stamp
	$(call checkpatch,$(KSRC)/scripts/checkpatch.pl)
	for std in c99 c11; do for m in -m64 -m32; do \
		echo '#include <linux/rdmaxfer.h>' | $(CC) $$m -std=$$std -Wall -Wextra -Werror -pedantic \
			-Iuapi -fsyntax-only -x c - || exit 1; done; done
	$(MAKE) -C tools/rdmaxfer O=$(CURDIR)/$(BUILD)/bin WERROR=1 -B
	$(MAKE) -C tools/labs O=$(CURDIR)/$(BUILD)/labs-bin WERROR=1 -B
	$(MAKE) -C selftests/rdmaxfer KSFT_INC=$(KSFT_INC) O=$(CURDIR)/$(BUILD)/selftests WERROR=1 -B
	shellcheck -x -S warning $(SHELL_SCRIPTS)

setup:
	$(RIG) setup

# The two commands of the README: both install what they need first.  The stock run
# lints everything; 6.12 and sid lint the module against their trees (the debug
# kernel's tree is the stock one's source).
check:
	$(RIG) setup
	$(if $(filter 0,$(LINT)),,$(if $(filter stock,$(KERNEL)),$(MAKE) lint,$(if $(filter-out debug,$(KERNEL)),$(MAKE) lint-kernel)))
	$(MAKE) stage
	$(RIG) check

# Every kernel of the rig and the packages, whatever fails ("N passed, N failed,
# N skipped" summed at the end): .ci/run all.
check-all:
	.ci/run all

demo:
	$(RIG) setup
	$(MAKE) stage
	$(RIG) demo

# BENCH_LAYOUT=single|pair|both (default both): one guest, or the two-guest pair
bench:
	$(RIG) setup
	$(MAKE) stage
	tools/vm/bench.sh $${BENCH_LAYOUT:-both}

labs:
	$(RIG) setup
	$(MAKE) stage
	tools/vm/labs.sh

FUZZ_SECS	?= 300
FUZZ_SEED	?=
fuzz:
	$(RIG) setup
	$(MAKE) stage
	$(RIG) run --timeout $$(($(FUZZ_SECS) + 600)) -- 'cd /opt/rdmaxfer/selftests/rdmaxfer && \
		export RDMAXFER_TEST_DEV=$(PROVIDER)0 RDMAXFER_TEST_ADDR=192.0.2.1 RDMAXFER_TEST_ADDR6=2001:db8::1 && \
		FUZZ_SECS=$(FUZZ_SECS) FUZZ_SEED=$(FUZZ_SEED) ./fuzz_ioctl.sh && ./dmesg_check.sh'

shell:
	$(RIG) setup
	$(MAKE) stage
	$(RIG) shell

install: module cli
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules_install
	install -D -m 0755 $(BUILD)/bin/rdmaxfer $(DESTDIR)$(PREFIX)/bin/rdmaxfer
	install -D -m 0644 Documentation/man/rdmaxfer.8 $(DESTDIR)$(PREFIX)/share/man/man8/rdmaxfer.8
	install -D -m 0644 Documentation/man/rdmaxfer.4 $(DESTDIR)$(PREFIX)/share/man/man4/rdmaxfer.4
	install -D -m 0644 tools/packaging/60-rdmaxfer.rules $(DESTDIR)/etc/udev/rules.d/60-rdmaxfer.rules
	@getent group rdma >/dev/null || echo "rdmaxfer: the udev rule gives /dev/rdmaxfer to group" \
		"'rdma', which does not exist: addgroup --system rdma"

deb:
	tools/packaging/deb.sh $(CURDIR)/$(BUILD)/deb

# the rig's 6.1 and 6.12 kernels: their headers for DKMS, their guests to boot
pkgtest: deb
	$(RIG) setup
	RIG_KERNEL=6.12 $(RIG) setup
	tools/packaging/pkgtest.sh

clean:
	-test -n "$(KDIR)" && $(KRUN) test -d "$(KDIR)" && $(KRUN) $(MAKE) -C $(KDIR) M=$(CURDIR) clean
	rm -rf $(BUILD)

.PHONY: all check-kdir module cli labprogs selftests stage lint lint-kernel setup check check-all demo \
	bench labs fuzz shell \
	install deb pkgtest clean
