# rcagent: build, run, test, bench. Every target installs the Debian packages it needs.
SWIFT      ?= swift
# Extra SwiftPM flags for every build, e.g. SWIFTPM_FLAGS="--scratch-path .build-mine" for a
# second build directory beside the default one.
SWIFTPM_FLAGS ?=
ROOT       := $(CURDIR)
SUDO       := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
BUILD_DEPS := libsqlite3-dev libsystemd-dev libcurl4-openssl-dev libssl-dev libmosquitto-dev libpcre2-dev libmicrohttpd-dev pkg-config g++
# nginx, nats-server, prometheus and prometheus-node-exporter: the fleet and metrics tests and the
# bench start their own processes (config, pid file, logs and data in a temporary directory), never
# the packages' system services, which they do not need.
TEST_DEPS  := $(BUILD_DEPS) sqlite3 python3 openssl mosquitto mosquitto-clients iproute2 dash libsystemd-shared strace nginx nats-server prometheus prometheus-node-exporter faketime go-md2man man-db groff-base
ORDER_DEPS := $(BUILD_DEPS) valgrind binutils python3
BENCH_DEPS := $(BUILD_DEPS) sqlite3 hyperfine jq python3 mosquitto mosquitto-clients redis-server redis-tools linux-perf strace dpkg-dev binutils go-md2man nginx nats-server
DEB_DEPS   := $(BUILD_DEPS) dpkg-dev lintian systemd binutils go-md2man python3 mosquitto mosquitto-clients procps openssl man-db groff-base
RELIABILITY_DEPS := $(TEST_DEPS)
# Release builds link the Swift runtime and libstdc++ statically: a directory holding only
# libstdc++.a makes the toolchain's `-lstdc++` pick the archive. That removes libstdc++.so's
# load-time symbol binding, about a third of the instructions `rcagent get` executes.
STATIC_CXX := $(ROOT)/.build/static-libstdc++
# Each release link prints "warning: the use of `mktemp' is dangerous, better use `mkstemp' or
# `mkdtemp'". It is expected and harmless: glibc marks mktemp with a link-time warning, and the
# static FoundationEssentials (--static-swift-stdlib) has one object, Data+Writing.swift.o, that
# calls it for Data.write(options: .atomic), which opens the name it gets with O_CREAT|O_EXCL
# (no race). Our code never calls it. The debug build links FoundationEssentials dynamically, so
# it stays quiet. Silencing it would take ld's -w, which hides every other linker warning too.
# --disable-local-rpath: SwiftPM would give every executable DT_RUNPATH=$ORIGIN, so that libsqlite3
# and every library loaded on first use were looked for beside the executable first: anyone who can
# write to that directory (a copy in /tmp, a build tree, a device's writable /opt) would run code in
# rcagentd. The static Swift runtime needs no search path; the release programs carry none
# (packaging/deb-check.sh checks it), so the loader searches only the system's directories.
# -disable-concrete-type-metadata-mangled-name-accessors: the first use of a generic type
# (Array<Key>, a closure's context) gets its metadata from an accessor function instead of by
# demangling its name at run time (swift_getTypeByMangledName), which every new daemon paid 3.2 M
# instructions for, and `rcagent get` 0.2 M of its 2.6 M; the executable grows by 15-30 KB
# (BENCHMARKS.md, issue 30).
# Function sections and packaging/rcagent.order: each function in a section of its own, and those
# the CLI's common commands run laid out together, first `rcagent get`'s. Spread over the executable
# they cost a page fault each 64 KiB window; together `get` runs in 0.94x the time (BENCHMARKS.md,
# issue 30). `make order` regenerates the file (packaging/order.py) and relinks.
# -static-libgcc: libgcc's unwinder linked in (the runtime's C++ and backtracer call it) instead of
# libgcc_s.so loaded at every start of the CLI: `get` in 0.96x the time (BENCHMARKS.md, issue 30).
# The daemon still loads it: glibc's pthread_exit, which dispatchMain calls, unwinds with it, so the
# package names libgcc-s1 in its Depends (packaging/debian/rcagent.control.in).
ORDER_FILE := $(ROOT)/packaging/rcagent.order
RELEASE    := $(SWIFT) build $(SWIFTPM_FLAGS) -c release --static-swift-stdlib --disable-local-rpath -Xswiftc -gnone \
	-Xswiftc -Xfrontend -Xswiftc -disable-concrete-type-metadata-mangled-name-accessors -Xlinker -L$(STATIC_CXX) \
	-Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xlinker --section-ordering-file=$(ORDER_FILE) \
	-Xswiftc -Xclang-linker -Xswiftc -static-libgcc
RELEASE_BIN = $(shell $(SWIFT) build $(SWIFTPM_FLAGS) -c release --show-bin-path)

.PHONY: all build release order deps-order test test-reliability fuzz lint format run run-config bench deb deb-check clean deps-build deps-test deps-bench deps-deb deps-reliability

all: build

# Installs whichever of the listed Debian packages are missing (apt-get update first, once).
define ensure_packages
	@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi
endef

deps-build: ; $(call ensure_packages,$(BUILD_DEPS))
deps-test:  ; $(call ensure_packages,$(TEST_DEPS))
deps-bench: ; $(call ensure_packages,$(BENCH_DEPS))
deps-order: ; $(call ensure_packages,$(ORDER_DEPS))
deps-deb:   ; $(call ensure_packages,$(DEB_DEPS))
deps-reliability: ; $(call ensure_packages,$(RELIABILITY_DEPS))

# rcagentd is rcagent called by another name (one executable, Package.swift): the link beside it.
build: deps-build
	$(SWIFT) build $(SWIFTPM_FLAGS)
	ln -sf rcagent "$$($(SWIFT) build $(SWIFTPM_FLAGS) --show-bin-path)/rcagentd"

# The link reads the order file but SwiftPM does not watch it: executables older than it are removed,
# which makes SwiftPM link them again.
release: deps-build
	@mkdir -p $(STATIC_CXX) && ln -sf "$$(g++ -print-file-name=libstdc++.a)" $(STATIC_CXX)/libstdc++.a
	@bin="$(RELEASE_BIN)"; for program in rcagent rcadmin; do \
		if [ "$(ORDER_FILE)" -nt "$$bin/$$program" ]; then rm -f "$$bin/$$program"; fi; done
	$(RELEASE)
	ln -sf rcagent "$(RELEASE_BIN)/rcagentd"

order: deps-order release
	python3 packaging/order.py "$(RELEASE_BIN)" $(ORDER_FILE)
	$(MAKE) release

# The reliability suites (Tests/EndToEndTests/Reliability, suites named Reliability*) run on their
# own: `make test-reliability`, which CI runs after `make test`.
test: deps-test lint
	$(SWIFT) build $(SWIFTPM_FLAGS) --build-tests
	$(SWIFT) test $(SWIFTPM_FLAGS) --skip-build --skip Reliability

test-reliability: deps-reliability
	$(SWIFT) build $(SWIFTPM_FLAGS) --build-tests
	$(SWIFT) test $(SWIFTPM_FLAGS) --skip-build --filter Reliability

# Parser fuzzing with libFuzzer: `make fuzz` runs every target of Sources/RCFuzzing for FUZZ_SECONDS
# each, `make fuzz FUZZ_TARGET=json FUZZ_SECONDS=600` one. Its own build directory (the fuzzer
# instruments every module); new inputs and crashes go to FUZZ_OUT/<target>/{corpus,crashes}.
# Replay a crash with the normal build: `swift run rcfuzz TARGET FILE`. (Swift's backtracer is off
# so that libFuzzer, not it, handles a trap and writes the input out.)
FUZZ_TARGET  ?=
FUZZ_SECONDS ?= 30
FUZZ_OUT     ?= .build-fuzz/findings
FUZZ_BUILD   := $(SWIFT) build --scratch-path .build-fuzz -c release --product rcfuzz \
	-Xswiftc -sanitize=fuzzer -Xswiftc -DRCFUZZ_LIBFUZZER \
	-Xlinker --undefined=LLVMFuzzerRunDriver -Xlinker --export-dynamic-symbol=LLVMFuzzerRunDriver

fuzz: deps-build
	$(FUZZ_BUILD)
	@bin="$$($(SWIFT) build --scratch-path .build-fuzz -c release --show-bin-path)/rcfuzz"; \
	targets="$(FUZZ_TARGET)"; [ -n "$$targets" ] || targets="$$($$bin --list)"; failed=""; \
	for t in $$targets; do \
		out="$(FUZZ_OUT)/$$t"; mkdir -p "$$out/corpus" "$$out/crashes"; \
		echo "== $$t: $(FUZZ_SECONDS) s"; \
		RCFUZZ_TARGET=$$t SWIFT_BACKTRACE=enable=no "$$bin" -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
			-dict=Tests/Fuzz/rcagent.dict -print_final_stats=1 -artifact_prefix="$$out/crashes/" \
			"$$out/corpus" "Tests/Fuzz/corpus/$$t" >"$$out/log" 2>&1 || failed="$$failed $$t"; \
		grep -E "^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)|^==[0-9]+== ERROR|Fatal error|^artifact_prefix|Test unit written" "$$out/log" | sed 's/^/   /'; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: findings in:$$failed (see $(FUZZ_OUT)/<target>/log)"; exit 1; fi; \
	echo "fuzz: no findings"

# The toolchain's formatter with the checked-in .swift-format; `make format` rewrites in place.
lint:
	$(SWIFT) format lint --recursive Sources Tests Package.swift

format:
	$(SWIFT) format --in-place --recursive Sources Tests Package.swift

# Runs the daemon in the foreground on the bundled example: a file source (run/remote.json,
# edit it to push a change) and state under run/. Query it from another shell as printed.
run: release run-config
	@echo "rcagentd on the example config. In another shell:"
	@echo "  export PATH=$(ROOT)/.build/release:\$$PATH RCAGENT_CONFIG=$(RUN_DIR)/agent.conf"
	@echo "  rcagent status; rcagent get kiosk_url    (the README's quick tour goes on from here)"
	@echo "  (edit run/remote.json to change values; Ctrl-C stops the daemon)"
	exec $(RELEASE_BIN)/rcagentd --config $(RUN_DIR)/agent.conf

# The example's files in RUN_DIR: agent.conf, and the defaults, source file and (empty) hooks.d it
# names. Nothing points outside RUN_DIR (ExampleTests check it); an edited remote.json or
# defaults.json is kept.
RUN_DIR ?= $(ROOT)/run
run-config:
	@mkdir -p $(RUN_DIR)/hooks.d
	@sed "s|@RUN@|$(RUN_DIR)|g" etc/example/agent.conf.in > $(RUN_DIR)/agent.conf
	@[ -f $(RUN_DIR)/remote.json ] || cp etc/example/remote.json $(RUN_DIR)/remote.json
	@[ -f $(RUN_DIR)/defaults.json ] || cp etc/rcagent/defaults.json $(RUN_DIR)/defaults.json

# Every bench/ script against the release build, one table at the end and bench/results.json
# (BENCHMARKS.md explains the figures). `bench/run.py BIN_DIR idle` runs one script.
bench: deps-bench release
	bench/run.py $(RELEASE_BIN)

# rcagent_VERSION_ARCH.deb (the device) and rcadmin_VERSION_ARCH.deb (the operator host) in the
# checkout: static Swift stdlib, no toolchain needed where they are installed.
deb: deps-deb release
	packaging/build-deb.sh $(RELEASE_BIN) $(ROOT)

# Builds both packages twice (an upgrade), lints them, verifies the units, checks the binaries link
# nothing from the toolchain, installs, runs, upgrades and purges them on this machine (needs root).
deb-check: deps-deb release
	packaging/deb-check.sh $(RELEASE_BIN)

clean:
	rm -rf .build run rcagent_*.deb rcadmin_*.deb
