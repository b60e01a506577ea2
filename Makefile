# ykterm — build, test and demo on Debian 12.
#   make demo   install what is missing, build, show the virtual key
#   make test   install what is missing, check the formatting, build, run every test (unit and integration)

SHELL := /bin/bash
PREFIX ?= /usr/local
SWIFT ?= swift
PYTHON ?= python3
VENV := .venv
YKTERM := .build/debug/ykterm

# System packages: build libraries (toml++'s headers, for the config file, among them; libxml2 for PSKC files;
# libqrencode, zbar, libpng and libjpeg for QR codes), pcscd with the vsmartcard vpcd driver, tools the tests use.
DEB_PACKAGES := pkg-config libpcsclite-dev libhidapi-dev libncurses-dev libssl-dev zlib1g-dev libtomlplusplus-dev \
                libxml2-dev libqrencode-dev libzbar-dev libpng-dev libjpeg62-turbo-dev \
                pcscd vsmartcard-vpcd util-linux tmux python3-venv groff-base time
PKG_CONFIG_MODULES := libpcsclite hidapi-hidraw ncursesw libcrypto tomlplusplus libxml-2.0 libqrencode zbar libpng libjpeg

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

# The version, read from its one place (Sources/CBuildInfo/include/build_info.h), for the package, the tarball and
# the man page's .TH line.
VERSION := $(shell sed -n 's/^\#define YKTERM_VERSION "\(.*\)"$$/\1/p' Sources/CBuildInfo/include/build_info.h)
# The commit every build is made from, which `ykterm --version` prints after the version (Package.swift hands it to
# Sources/CBuildInfo alone): the short hash, with -dirty when tracked files differ from it; empty in a tree that is
# not a git checkout of its own (a tarball, even one unpacked inside another repository). Set it to override.
GIT_CHECKOUT := $(shell [ "$$(git -C $(CURDIR) rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && echo yes)
ifndef YKTERM_COMMIT
YKTERM_COMMIT := $(if $(GIT_CHECKOUT),$(shell h=$$(git -C $(CURDIR) rev-parse --short HEAD) && \
  if git -C $(CURDIR) diff --quiet HEAD --; then echo $$h; else echo $$h-dirty; fi))
endif
export YKTERM_COMMIT
# Every date and file time in the package and the tarball: the commit's time (outside git, the version file's).
SOURCE_DATE_EPOCH ?= $(if $(GIT_CHECKOUT),$(shell git -C $(CURDIR) log -1 --format=%ct),$(shell \
  stat -c %Y Sources/CBuildInfo/include/build_info.h))

.PHONY: all help build release release-shared deb dist reproducible deps venv lint format test test-unit golden test-integration test-asan test-tsan soak storm bench hot-functions fuzz fuzz-build demo install uninstall clean distclean

## all: the same as build.
all: build

## help: every target with the first sentence of what its comment here says.
help:
	@awk 'function out(  n, w, words, i, line) { if (name == "") return; gsub(/e\.g\./, "e_g_", text); \
	    sub(/\. .*/, ".", text); gsub(/e_g_/, "e.g.", text); n = split(text, words, " "); line = ""; \
	    for (i = 1; i <= n; i++) { if (length(line) + length(words[i]) > 76) { lines[++c] = line; line = "" } \
	      line = line (line == "" ? "" : " ") words[i] } lines[++c] = line; \
	    printf "%-22s %s\n", name, lines[1]; for (i = 2; i <= c; i++) printf "%-22s %s\n", "", lines[i]; \
	    c = 0; name = "" } \
	  /^## [a-z][a-z0-9 \/-]*: / && name == "" { line = substr($$0, 4); i = index(line, ": "); \
	    name = substr(line, 1, i - 1); text = substr(line, i + 2); next } \
	  /^## / && name != "" { text = text " " substr($$0, 4); next } \
	  { out() } END { out() }' $(firstword $(MAKEFILE_LIST))

## deps: install the Debian packages that are missing (apt-get as root, sudo otherwise). The servers the
## integration tests start themselves (DEB_SERVER_PACKAGES: sshd, on 127.0.0.1 for `ykterm remote`) are installed
## with their system service off: Debian's /etc/ssh/sshd_not_to_be_run keeps sshd's unit from starting, and a
## policy-rc.d that refuses every start is in place during the install (removed after, when it was not there).
DEB_SERVER_PACKAGES :=
test test-integration: DEB_SERVER_PACKAGES := openssh-server
# The USB key's ssh-keygen and ssh tests build Tests/Bench/hidraw_shim.c for libfido2; the PIV SSH tests use ykcs11
# (ssh -I, ssh-keygen -D) and openssl. test_deb.py runs make deb (the release build and the Debian tools, lintian)
# and checks the installed package with man-db, bash-completion and strace; dpkg-repack keeps aside a ykterm package
# installed before it. test_openpgp.py runs gpg --card-status through scdaemon (gnupg and scdaemon; the test
# starts scdaemon and gpg-agent itself, in a private GNUPGHOME). test_oath_qr.py makes QR images with qrencode, and
# JPEG ones with libjpeg-turbo's cjpeg.
test test-integration: DEB_PACKAGES += gcc libc6-dev openssh-client openssl ykcs11 \
  libstdc++-12-dev dpkg-dev binutils lintian man-db bash-completion strace dpkg-repack gnupg scdaemon \
  qrencode libjpeg-turbo-progs
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing \
	    </dev/null; \
	fi
	@missing=""; for p in $(DEB_SERVER_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing, with their services off:$$missing"; \
	  $(SUDO) mkdir -p /etc/ssh && $(SUDO) touch /etc/ssh/sshd_not_to_be_run && \
	  policy=""; if [ ! -e /usr/sbin/policy-rc.d ]; then \
	    printf '#!/bin/sh\nexit 101\n' | $(SUDO) tee /usr/sbin/policy-rc.d >/dev/null && \
	    $(SUDO) chmod 755 /usr/sbin/policy-rc.d && policy=1; fi; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing \
	    </dev/null; rc=$$?; \
	  if [ -n "$$policy" ]; then $(SUDO) rm -f /usr/sbin/policy-rc.d; fi; \
	  exit $$rc; \
	fi
	@pkg-config --exists $(PKG_CONFIG_MODULES) || \
	  { echo "pkg-config cannot find: $(PKG_CONFIG_MODULES)"; exit 1; }
	@command -v $(SWIFT) >/dev/null || { echo "swift is not on PATH (Swift 6 toolchain needed)"; exit 1; }

## venv: Python test peers (ykman, python-fido2, pyotp, yubiotp, pytest) in .venv.
$(VENV)/.installed: Tests/Integration/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r Tests/Integration/requirements.txt
	touch $@

venv: $(VENV)/.installed

## build: the debug build (.build/debug/ykterm), after installing what is missing.
build: deps
	$(SWIFT) build

## release: one binary with the Swift runtime linked in (runs without the toolchain; starts faster, less memory).
## It is linked at a fixed address (no-pie: the loader has no 80,000 pointers to relocate and copy at start),
## exports no symbols (see Resources/link/release-exports.map), and has every function in a section of its own
## so that gold places the functions everyday commands run next to each other, in the order listed in
## Resources/link/hot-functions.txt (`make hot-functions` writes it). All three take start-up time and memory off
## every run. It has no run path (--disable-local-rpath): with SwiftPM's $ORIGIN the loader first looked for
## each library next to the binary, two dozen failed opens and stats at every start. After changing these
## flags, delete .build/*/release/*.build: the compiler reuses objects whose code did not change even when the
## flags did.
##
## The C libraries that have archives are linked in too — libcrypto, hidapi-hidraw, ncursesw and tinfo, libpng and
## libjpeg (QR code images), libstdc++ and the unwinder (libgcc_eh) — so the loader maps and relocates five shared
## objects instead of eleven (libpcsclite and libudev have no archive in Debian; glibc stays shared): about 1.2 ms
## and 2 MiB off every run. libqrencode and zbar are not linked at all: ykterm loads them with dlopen when a QR code
## is drawn or read (Sources/CQREncode, Sources/CZBar). toml++ has no
## archive either, and its shared library would load the shared libstdc++: its headers are compiled into the
## Sources/CTOMLPlusPlus target instead, in every build. SwiftPM links
## what the module maps name (`link "crypto"`) from the first directory that has it, shared or not: the release
## build reads the C libraries' pkg-config files from copies in STATIC_LINK whose `-L` put STATIC_LINK (which holds
## only the archives) first.
STATIC_LINK := $(CURDIR)/.build/static-link
STATIC_ARCHIVES := libcrypto.a libhidapi-hidraw.a libncursesw.a libtinfo.a libpng16.a libjpeg.a
RELEASE_LINK := -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=gold \
                -Xswiftc -Xclang-linker -Xswiftc -no-pie \
                -Xlinker --version-script=$(CURDIR)/Resources/link/release-exports.map \
                -Xlinker --section-ordering-file=$(CURDIR)/Resources/link/hot-functions.txt \
                -Xlinker --as-needed -Xlinker -ltinfo -Xlinker -l:libudev.so.1 -Xlinker -lgcc_eh -Xlinker --no-as-needed
# C++ (Sources/CTOMLPlusPlus) with DWARF 4 debug information, as Swift writes it: valgrind 3.19 (Debian 12) gives up
# on the whole binary at clang's default DWARF 5, and make hot-functions runs the release build under valgrind.
RELEASE_CXX := -Xcxx -gdwarf-4
release: DEB_PACKAGES += gcc libstdc++-12-dev
release: deps
	@# SwiftPM does not know the link files: a newer one means linking again.
	@for f in Resources/link/*; do [ "$$f" -nt .build/release/ykterm ] && \
	  rm -f .build/release/ykterm .build/release/libykterm-ifd-one-slot.so; done; true
	@mkdir -p $(STATIC_LINK)/pkgconfig
	@for a in $(STATIC_ARCHIVES); do ln -sf $$(pkg-config --variable=libdir libcrypto)/$$a $(STATIC_LINK)/$$a; done
	@ln -sf $$(cc -print-file-name=libstdc++.a) $(STATIC_LINK)/libstdc++.a
	@for m in libpcsclite hidapi-hidraw libcrypto; do sed 's|^Libs:|Libs: -L$(STATIC_LINK)|' \
	  $$(pkg-config --variable=pcfiledir $$m)/$$m.pc > $(STATIC_LINK)/pkgconfig/$$m.pc; done
	PKG_CONFIG_PATH=$(STATIC_LINK)/pkgconfig $(SWIFT) build -c release --static-swift-stdlib --disable-local-rpath $(RELEASE_LINK) \
	  $(RELEASE_CXX)

# The man page as installed: man/ykterm.1 with the version on its .TH line (the source leaves it out, so the version
# is written in one place only).
MAN_PAGE := .build/man/ykterm.1
$(MAN_PAGE): man/ykterm.1 Sources/CBuildInfo/include/build_info.h
	@mkdir -p $(@D)
	sed '1s/^\(\.TH YKTERM 1 "[^"]*"\) "ykterm"/\1 "ykterm $(VERSION)"/' man/ykterm.1 > $@.tmp
	@grep -q '^\.TH YKTERM 1 "[^"]*" "ykterm $(VERSION)"' $@.tmp || \
	  { echo "man/ykterm.1: no .TH line to put the version in"; rm -f $@.tmp; exit 1; }
	@mv $@.tmp $@

## release-shared: the release binary linked a second time, from the same objects, against Debian's shared
## libraries, the Swift runtime still linked in: what the Debian package ships. Debian policy asks for the shared
## libraries (libcrypto, ncursesw and tinfo, zlib, libxml2, libstdc++, libgcc_s), so that their security updates
## reach ykterm; Debian has no package of the Swift runtime. hidapi drops out: it is in the link (Sources/CHIDAPI) but
## unused. Position-independent, as Debian builds every program (the release build is not, for start-up).
## Resources/deb/link-shared.py runs SwiftPM's own link command without the archives of STATIC_LINK and without
## -no-pie, so one compile serves both links (a link takes seconds). Beside it the one-slot reader driver,
## compiled from Sources/CIFDOneSlot with cc and Debian's build flags: SwiftPM's link of a library adds the
## toolchain's libswiftCore.so (with a run path into the toolchain), which that C code never uses and a machine
## without the toolchain does not have. Both in .build/release-shared.
RELEASE_SHARED := .build/release-shared
release-shared: DEB_PACKAGES += dpkg-dev
release-shared: release
	$(PYTHON) Resources/deb/link-shared.py $(CURDIR) $(STATIC_LINK) $(RELEASE_SHARED)/ykterm
	cc $$(dpkg-buildflags --get CPPFLAGS) $$(dpkg-buildflags --get CFLAGS) -fPIC -shared \
	  $$(dpkg-buildflags --get LDFLAGS) -Wl,-z,now -Wl,--version-script=$(CURDIR)/Resources/link/release-exports.map \
	  -I Sources/CIFDOneSlot/include -o $(RELEASE_SHARED)/libykterm-ifd-one-slot.so Sources/CIFDOneSlot/ifd_one_slot.c

## deb: the Debian package, dist/ykterm_VERSION_ARCH.deb (Resources/deb/build-deb.sh, with dpkg-shlibdeps,
## dpkg-gencontrol and dpkg-deb): the release-shared binary, the man page, completions, the udev rules, the string
## tables, the one-slot driver, the documentation; then lintian, which must report no error (a warning kept would
## be explained in Resources/deb/lintian-overrides, installed when it is there, or README's packaging section; none
## is). lintian's ELF cache goes to a folder of its own, removed after. Reproducible: every time is the commit's
## (SOURCE_DATE_EPOCH), every file root's, every list sorted, and the Swift compiler's module hashes, which differ
## from build to build, are zeroed (Resources/deb/reproducible-elf.py): the same commit built in the same folder
## gives the same bytes.
DIST := dist
DEB_WORK := .build/deb
deb: DEB_PACKAGES += dpkg-dev binutils lintian
deb: release-shared $(MAN_PAGE)
	@deb=$$(VERSION=$(VERSION) SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) Resources/deb/build-deb.sh \
	    $(RELEASE_SHARED)/ykterm $(RELEASE_SHARED)/libykterm-ifd-one-slot.so $(MAN_PAGE) $(DEB_WORK) $(DIST)) && \
	  echo "lintian $$deb" && lintian_tmp=$$(mktemp -d) && trap 'rm -rf "$$lintian_tmp"' EXIT && \
	  TMPDIR=$$lintian_tmp lintian --fail-on error "$$deb" && \
	  sha256sum "$$deb"

## dist: a tarball for other distributions, dist/ykterm-VERSION-linux-ARCH.tar.gz, and its SHA-256 beside it
## (.sha256, for sha256sum -c): the release binary (its C libraries linked in; it needs glibc, libpcsclite, zlib and
## libxml2, and libqrencode and zbar for QR codes, loaded when used),
## the one-slot reader driver, the man page, completions, udev rules, string tables and example config, laid out as
## `make install` lays out a PREFIX (bin/ykterm finds ../share/ykterm and ../lib/ykterm), with README.md and LICENSE.
## Unpack it anywhere (README: in /opt, with a link in /usr/local/bin). Reproducible as the package is.
DIST_NAME = ykterm-$(VERSION)-linux-$(shell uname -m)
dist: release-shared $(MAN_PAGE)
	@rm -rf $(DEB_WORK)-dist && mkdir -p $(DEB_WORK)-dist $(DIST) && umask 022 && \
	  stage=$(DEB_WORK)-dist/$(DIST_NAME) && \
	  $(MAKE) --no-print-directory -s install -o release PREFIX= DESTDIR=$(CURDIR)/$$stage \
	    BUILT=.build/release/ykterm DRIVER=$(RELEASE_SHARED)/libykterm-ifd-one-slot.so && \
	  strip --remove-section=.comment --remove-section=.note $$stage/bin/ykterm && \
	  Resources/deb/reproducible-elf.py $$stage/bin/ykterm && \
	  strip --remove-section=.comment --remove-section=.note --strip-unneeded $$stage/lib/ykterm/*.so && \
	  install -m 644 README.md LICENSE $$stage/ && \
	  tar --sort=name --mtime=@$(SOURCE_DATE_EPOCH) --owner=0 --group=0 --numeric-owner --format=gnu \
	    -C $(DEB_WORK)-dist -cf - $(DIST_NAME) | gzip -9n > $(DIST)/$(DIST_NAME).tar.gz && \
	  (cd $(DIST) && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256 && cat $(DIST_NAME).tar.gz.sha256)

## reproducible: makes the package and the tarball twice, the second time after removing the release build (so
## every object is compiled again, about three minutes more on 2 cores), and fails unless both come out with the
## same SHA-256. make test packages one build twice (test_deb.py); this compiles twice.
reproducible:
	@$(MAKE) --no-print-directory deb dist >/dev/null
	@cd $(DIST) && sha256sum ykterm_$(VERSION)_*.deb $(DIST_NAME).tar.gz > $(CURDIR)/$(DEB_WORK)-first.sha256
	rm -rf $$(readlink -f .build/release) .build/release.yaml $(RELEASE_SHARED)
	@$(MAKE) --no-print-directory deb dist >/dev/null
	@cd $(DIST) && sha256sum ykterm_$(VERSION)_*.deb $(DIST_NAME).tar.gz | \
	  diff $(CURDIR)/$(DEB_WORK)-first.sha256 - && cat $(CURDIR)/$(DEB_WORK)-first.sha256 && \
	  echo "the same bytes from two builds"

## hot-functions: runs the release build under valgrind (a private pcscd and a virtual key; oath, list, fido,
## the TUI) and rewrites Resources/link/hot-functions.txt with the functions that ran. Then `make release`.
hot-functions: release venv
	@command -v valgrind >/dev/null || { echo "valgrind is needed: apt-get install valgrind"; exit 1; }
	$(VENV)/bin/python Tests/Bench/hot_functions.py --binary $(CURDIR)/.build/release/ykterm

## test-unit: the unit tests one at a time (--no-parallel). In parallel, on 2 cores, the tests that block a thread
## of the cooperative pool (two of them) starve the ones that wait for a runner's answer or a key's timed
## keep-alives, and on a machine busy with anything else some of those failed by chance; one at a time they take
## about 95 s instead of 35, and pass whatever else runs.
UNIT_TEST := $(SWIFT) test --no-parallel
test-unit: build
	$(UNIT_TEST)

## golden: writes the golden frames of the view tests (Tests/TerminalUITests/Golden) anew from the views as they
## are now; review the difference with git before committing. Tests never write them.
golden: build
	YKTERM_GOLDEN_UPDATE=1 $(SWIFT) test --filter GoldenFrameTests
	@git status --short Tests/TerminalUITests/Golden

## test-integration: the integration tests (Tests/Integration, pytest) against the virtual key and real clients.
test-integration: build venv
	cd Tests/Integration && ../../$(VENV)/bin/python -m pytest -q

## lint: checks the formatting of Sources, Tests and Package.swift with swift format (the toolchain's swift-format,
## configured in .swift-format) and fails on any finding. `swift format` leaves out hidden folders, so the builds
## (.build, Tests/Fuzz/.build) are not read.
SWIFT_FORMAT_PATHS := Sources Tests Package.swift
LINT := $(SWIFT) format lint --recursive --strict --configuration .swift-format $(SWIFT_FORMAT_PATHS)
lint:
	$(LINT)

## format: formats Sources, Tests and Package.swift in place as .swift-format says; run it before committing.
format:
	$(SWIFT) format format --in-place --recursive --configuration .swift-format $(SWIFT_FORMAT_PATHS)

## test: every test, unit then integration, with a private TMPDIR (and TMUX_TMPDIR) removed at the end, so the
## toolchain's and the tests' temporary files never pile up in /tmp (.ci/run checks that nothing is left). The
## lint runs first: a formatting slip fails in seconds, not after the build and the tests.
test: deps venv
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/ykterm-test.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	  export TMPDIR="$$tmp" TMUX_TMPDIR="$$tmp" && \
	  echo "$(LINT)" && $(LINT) && \
	  $(SWIFT) build && $(UNIT_TEST) && \
	  (cd Tests/Integration && ../../$(VENV)/bin/python -m pytest -q)

## test-asan / test-tsan: the unit tests under the address and thread sanitizers (own build folders), one at a
## time: the sanitizers slow everything down several times, and in parallel the tests that wait up to 10 s for a
## runner's answer can find the few cooperative threads (two on two cores) all taken by tests that block them.
## Leaks that are the toolchain's own (Foundation's Process, XCTest) are suppressed in Tests/Sanitizers/lsan.supp,
## each with its reason.
test-asan: deps
	LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/lsan.supp:print_suppressions=0 \
	  $(SWIFT) test --sanitize=address --scratch-path .build-asan --no-parallel

test-tsan: deps
	TSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/tsan.supp \
	  $(SWIFT) test --sanitize=thread --scratch-path .build-tsan --no-parallel

## soak: two TUIs for SOAK_MINUTES (30 by default) on two virtual keys while a USB one is pulled out and plugged in
## every few seconds, the other comes and goes, pcscd is killed every minute and ykman and `ykterm oath code` read
## codes beside them; one TUI stays on the OATH tab, the other moves from tab to tab; every code on either screen is
## checked with pyotp. Prints the figures and fails on a wrong code, a missed period boundary, an arrival never
## shown, a leak, an exit of a TUI or anything on its standard error (Tests/Integration/soak.py; root); how soon
## codes showed is a figure (SOAK_ARGS="--latency-limit 1" makes it a criterion). make test runs it for 3 minutes.
## SOAK_ARGS e.g. "--seed 7 --json soak.json". A private TMPDIR, as for make test.
##
## The run uses a copy of the binary (and of the one-slot reader driver) in its private TMPDIR, so a build during
## a long run cannot break it (exec of a binary being written fails with ETXTBSY).
## SOAK_SANITIZER=thread or address: the soak against ykterm built with that sanitizer, `swift build
## --sanitize=thread --scratch-path .build-tsan --product ykterm` (address: .build-asan), which takes several
## minutes the first time. pcscd is not instrumented, so the one-slot reader driver it loads is the plain build's,
## copied next to that binary. TSAN_OPTIONS or ASAN_OPTIONS name log_path=TMPDIR/sanitizer/report (and the
## suppressions in Tests/Sanitizers): every ykterm process of the run (both TUIs, the served keys, the plug and
## oath code commands) writes its reports there, where a TUI's would not be lost with its screen; the soak reads
## them at the end and fails on any (Tests/Integration/sanitizers.py), printing the first; --json keeps them all.
## The sanitizers slow ykterm down several times and grow their own memory (--sanitized): new codes then have 6 s,
## not 3, and RSS growth is a figure, not a criterion.
SOAK_MINUTES ?= 30
SOAK_ARGS ?=
SOAK_SANITIZER ?=
SANITIZER_SCRATCH_thread := .build-tsan
SANITIZER_SCRATCH_address := .build-asan

# $(call sanitized,SANITIZER): shell lines (inside a recipe that has made $$tmp) that build ykterm with SANITIZER
# when one is named, and export YKTERM_BIN and the sanitizer's options for what runs next.
define sanitized
mkdir -p "$$tmp/bin" && \
case "$(1)" in \
  "") cp $(YKTERM) .build/debug/libykterm-ifd-one-slot.so "$$tmp/bin/" && \
    export YKTERM_BIN="$$tmp/bin/ykterm" ;; \
  thread|address) scratch=$(SANITIZER_SCRATCH_$(1)) && \
    $(SWIFT) build --sanitize=$(1) --scratch-path $$scratch --product ykterm && \
    cp $$scratch/debug/ykterm .build/debug/libykterm-ifd-one-slot.so "$$tmp/bin/" && \
    mkdir -p "$$tmp/sanitizer" && \
    export YKTERM_BIN="$$tmp/bin/ykterm" \
      TSAN_OPTIONS="log_path=$$tmp/sanitizer/report:suppressions=$(CURDIR)/Tests/Sanitizers/tsan.supp" \
      ASAN_OPTIONS="log_path=$$tmp/sanitizer/report" \
      LSAN_OPTIONS="suppressions=$(CURDIR)/Tests/Sanitizers/lsan.supp:print_suppressions=0" ;; \
  *) echo "the sanitizer is thread or address, not $(1)"; exit 2 ;; \
esac
endef

soak: build venv
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/ykterm-soak.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	  export TMPDIR="$$tmp" TMUX_TMPDIR="$$tmp" && \
	  $(call sanitized,$(SOAK_SANITIZER)) && \
	  $(VENV)/bin/python Tests/Integration/soak.py --minutes $(SOAK_MINUTES) \
	    $(if $(SOAK_SANITIZER),--sanitized) $(SOAK_ARGS) </dev/null

## storm: the plug-in storm (issue 35; Tests/Integration/storm.py; root): the TUI on a USB virtual key pulled out and
## plugged in with 20 to 200 ms between the commands (each returns once pcscd has seen the card come or go, about
## 0.3 s), moving from tab to tab every 4 s, until STORM_PLUGS plug-ins (2000 by default) or STORM_MINUTES minutes,
## under CPU load (a busy loop per core; STORM_LOAD=no for none). The TUI's standard error goes to a file, where a
## fatal signal's report lands; with gdb and cc there (and no sanitizer) it runs with --stacks, so a crash stops the
## TUI for gdb to write every thread's stack (ykterm never leaves a core file). Fails on any exit of the TUI,
## anything on its standard error, the OATH tab without the right codes within 5 s of the key left in at the end,
## or q not ending it with status 0; prints plug-ins per tab. STORM_ARGS e.g. "--seed 7 --workdir DIR" (DIR keeps
## stderr.txt and stacks.txt), "--json storm.json". STORM_SANITIZER as SOAK_SANITIZER. make test runs 120 plug-ins
## (test_storm.py).
STORM_PLUGS ?= 2000
STORM_MINUTES ?=
STORM_LOAD ?= yes
STORM_ARGS ?=
STORM_SANITIZER ?=
storm: build venv
	@tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/ykterm-storm.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	  export TMPDIR="$$tmp" TMUX_TMPDIR="$$tmp" && \
	  $(call sanitized,$(STORM_SANITIZER)) && \
	  $(VENV)/bin/python Tests/Integration/storm.py $(if $(STORM_PLUGS),--plugs $(STORM_PLUGS)) \
	    $(if $(STORM_MINUTES),--minutes $(STORM_MINUTES)) $(if $(filter yes,$(STORM_LOAD)),--load) \
	    $(if $(STORM_SANITIZER),,$$(command -v gdb >/dev/null && command -v cc >/dev/null && echo --stacks)) \
	    $(STORM_ARGS) </dev/null

## bench: the release build against the floor — C references built here from Tests/Bench (the same APDUs through
## libpcsclite; CTAPHID INIT + getInfo on a hidraw node; a program linked with the same libraries that only prints),
## libfido2's fido2-token — and against ykman, on the virtual key through a private pcscd and as a USB key; then
## where start-up goes; and the Debian package's link (release-shared) beside the release build, for what the
## shared libraries cost at start-up. Not a test: prints tables. BENCH_ARGS e.g. "--runs 40 --idle 180".
BENCH_ARGS ?=
BENCH_OUT := .build/bench
SWIFTC ?= $(SWIFT)c
bench: DEB_PACKAGES += fido2-tools gcc libc6-dev binutils procps dpkg-dev
bench: release release-shared venv
	@mkdir -p $(BENCH_OUT)
	cc -O2 -Wall -Wextra -o $(BENCH_OUT)/pcsc_ref Tests/Bench/pcsc_ref.c $$(pkg-config --cflags --libs libpcsclite)
	cc -O2 -Wall -Wextra -o $(BENCH_OUT)/ctaphid_ref Tests/Bench/ctaphid_ref.c
	cc -O2 -Wall -Wextra -shared -fPIC -o $(BENCH_OUT)/hidraw_shim.so Tests/Bench/hidraw_shim.c -ldl
	@# Every library the release binary lists as needed, each loaded and initialised even when nothing of it is used.
	cc -O2 -Wall -Wextra -o $(BENCH_OUT)/version_ref Tests/Bench/version_ref.c -Wl,--no-as-needed \
	  $$(readelf -d .build/release/ykterm | sed -n 's/.*Shared library: \[\(.*\)\]/-l:\1/p')
	@# Swift's own floors, linked as the release binary is: a program that prints a line, and one that parses its
	@# arguments with ArgumentParser (the release build's objects of it).
	$(SWIFTC) -O -swift-version 6 -static-stdlib -Xclang-linker -no-pie -o $(BENCH_OUT)/swift_floor \
	  Tests/Bench/swift_floor.swift
	$(SWIFTC) -O -swift-version 6 -static-stdlib -parse-as-library -Xclang-linker -no-pie -I .build/release/Modules \
	  -o $(BENCH_OUT)/argparse_floor Tests/Bench/argparse_floor.swift .build/release/ArgumentParser.build/*.o \
	  .build/release/ArgumentParserToolInfo.build/*.o
	YKTERM_BIN=$(CURDIR)/.build/release/ykterm YKTERM_SHARED_BIN=$(CURDIR)/$(RELEASE_SHARED)/ykterm \
	  BENCH_REFS=$(CURDIR)/$(BENCH_OUT) \
	  $(VENV)/bin/python Tests/Bench/bench.py $(BENCH_ARGS)

## fuzz: every libFuzzer target (Tests/Fuzz, a package of its own: the parsers, and whole sessions against a device
## answering from the input) for FUZZ_SECONDS each, from the seed corpora in Tests/Fuzz/Corpus; prints executions
## and crashes per target and fails when one crashed. FUZZ_TARGETS picks some. Release mode with lld only: debug
## builds crash gold's DWARF reader.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?=
## fuzz-build: builds the libFuzzer targets (release, with the fuzzer and address sanitizers).
fuzz-build: deps
	cd Tests/Fuzz && $(SWIFT) build -c release -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library \
	  -Xswiftc -use-ld=lld

fuzz: fuzz-build
	FUZZ_SECONDS=$(FUZZ_SECONDS) Tests/Fuzz/run.sh $(FUZZ_TARGETS)

## install: release binary, man page, shell completions, udev rules, string tables, example config, and the
## one-slot reader driver of the USB virtual key
## (PREFIX=/usr/local, DESTDIR for packaging; BUILT names another binary, e.g. with make -o release, DRIVER
## another driver).
## The udev rules go to share/ykterm/udev (`ykterm doctor` shows how to put them in place). UDEV_GROUP_RULE=1 also
## installs the group rule into UDEV_RULES_DIR (/etc/udev/rules.d): the keys' HID nodes for the group UDEV_GROUP
## (plugdev), for use from SSH sessions, which the seat rule's uaccess does not cover.
BUILT ?= .build/release/ykterm
DRIVER ?= $(dir $(BUILT))libykterm-ifd-one-slot.so
BINDIR = $(DESTDIR)$(PREFIX)/bin
MANDIR = $(DESTDIR)$(PREFIX)/share/man/man1
SHAREDIR = $(DESTDIR)$(PREFIX)/share/ykterm
UDEV_GROUP_RULE ?=
UDEV_GROUP ?= plugdev
UDEV_RULES_DIR ?= /etc/udev/rules.d
install: release $(MAN_PAGE)
	install -d $(BINDIR) $(MANDIR) $(SHAREDIR)/udev \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 $(BUILT) $(BINDIR)/ykterm
	@# The one-slot reader driver `virtual-key serve --usb` gives its private pcscd (vpcd's second slot would
	@# show as a second, empty reader); ykterm looks for it in ../lib/ykterm next to its own directory.
	install -d $(DESTDIR)$(PREFIX)/lib/ykterm
	install -m 644 $(DRIVER) $(DESTDIR)$(PREFIX)/lib/ykterm/libykterm-ifd-one-slot.so
	install -m 644 $(MAN_PAGE) $(MANDIR)/ykterm.1
	install -m 644 Resources/udev/70-ykterm-fido.rules $(SHAREDIR)/udev/70-ykterm-fido.rules
	install -m 644 Resources/udev/70-ykterm-fido-group.rules $(SHAREDIR)/udev/70-ykterm-fido-group.rules
	@if [ "$(UDEV_GROUP_RULE)" = 1 ]; then \
	  install -d $(DESTDIR)$(UDEV_RULES_DIR) && \
	  sed 's/GROUP="plugdev"/GROUP="$(UDEV_GROUP)"/' Resources/udev/70-ykterm-fido-group.rules \
	    > $(DESTDIR)$(UDEV_RULES_DIR)/70-ykterm-fido-group.rules && \
	  chmod 644 $(DESTDIR)$(UDEV_RULES_DIR)/70-ykterm-fido-group.rules && \
	  echo "Installed $(UDEV_RULES_DIR)/70-ykterm-fido-group.rules (group $(UDEV_GROUP)): add users with" \
	    "usermod -aG $(UDEV_GROUP) NAME, then udevadm control --reload && udevadm trigger"; \
	fi
	install -d $(SHAREDIR)/strings
	install -m 644 Resources/strings/*.json $(SHAREDIR)/strings/
	install -m 644 Resources/config.example.toml $(SHAREDIR)/config.example.toml
	$(BUILT) --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ykterm
	$(BUILT) --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ykterm
	$(BUILT) --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ykterm.fish

## uninstall: removes what install put in place (the same PREFIX and DESTDIR).
uninstall:
	rm -f $(BINDIR)/ykterm $(MANDIR)/ykterm.1 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ykterm \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_ykterm \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/ykterm.fish
	rm -rf $(SHAREDIR) $(DESTDIR)$(PREFIX)/lib/ykterm
	@# The group rule only when install put it there (UDEV_GROUP_RULE=1): its header names ykterm.
	@if grep -qs '^# ykterm: give the members of a group' $(DESTDIR)$(UDEV_RULES_DIR)/70-ykterm-fido-group.rules; then \
	  rm -f $(DESTDIR)$(UDEV_RULES_DIR)/70-ykterm-fido-group.rules; fi

## demo: the TUI on the virtual key with demo accounts (q quits); without a terminal, what the key holds.
demo: build
	@if [ -t 0 ] && [ -t 1 ]; then $(YKTERM) --virtual; \
	else $(YKTERM) list --virtual && $(YKTERM) oath code --virtual; fi

## clean: removes the build (.build) and what make deb and make dist made (dist).
clean:
	rm -rf .build $(DIST)

## distclean: removes the builds, the sanitizer and fuzz builds, the virtualenv and the fuzz work folder.
distclean: clean
	rm -rf $(VENV) .build-* .build_* Tests/Fuzz/.build Tests/Fuzz/.work
