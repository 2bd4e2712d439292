# silt — build, run, test and benchmark. Plain make; libraries via pkg-config.
# `make run` and `make test` install missing Debian packages first (as root).

BUILD   ?= build
PKGS     = libpq libevent libzstd libxxhash libcrypto inih libjwt
CC      ?= cc
OPT     ?= -O2 -g
WERROR  ?=
SAN     ?=
SANITIZERS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
SANFLAGS = $(if $(SAN),$(SANITIZERS))
CFLAGS   = -std=c11 -D_GNU_SOURCE -pthread $(OPT) -Wall -Wextra -Wformat=2 -Wstrict-prototypes \
           $(WERROR) $(SANFLAGS) -Isrc -I$(BUILD)/gen $(shell pkg-config --cflags $(PKGS))
LDFLAGS  = $(SANFLAGS) -pthread
LDLIBS   = $(shell pkg-config --libs $(PKGS)) -lm

SRC      := $(shell find src -name '*.c' | sort)
OBJ      := $(SRC:%.c=$(BUILD)/%.o) $(BUILD)/gen/embed_sql.o $(BUILD)/gen/embed_web.o
LIBOBJ   := $(filter-out $(BUILD)/src/main.o,$(OBJ))
UNIT     := $(shell find tests/unit -name '*.c' | sort)
INTEG    := $(shell find tests/integration -name '*.c' | sort)
# The schema: numbered migrations (tables, indexes, data), then the function
# files in the order sql/functions/ORDER declares ("before" ones first), and
# the bridge from the migrations the baseline replaced.
MIGRATIONS   := $(sort $(wildcard sql/migrations/*.sql))
FUNCS_BEFORE := $(addprefix sql/functions/,$(shell sed -n 's/^before //p' sql/functions/ORDER))
FUNCS        := $(addprefix sql/functions/,$(shell grep -v '^\#\|^before \|^$$' sql/functions/ORDER))
SQL          := $(MIGRATIONS) $(FUNCS_BEFORE) $(FUNCS) sql/bridge_to_baseline.sql
ifneq ($(filter-out $(FUNCS_BEFORE) $(FUNCS),$(wildcard sql/functions/*.sql)),)
$(error sql/functions/ORDER does not list $(filter-out $(FUNCS_BEFORE) $(FUNCS),$(wildcard sql/functions/*.sql)))
endif
# The dashboard: silt's own files, and Chart.js as Debian's libjs-chart.js
# installs it (scripts/deps.sh), embedded from there: no copy in the tree.
CHARTJS ?= /usr/share/javascript/chart.js/chart.min.js
WEB      := $(sort $(wildcard web/*)) $(CHARTJS)

.PHONY: all deps run test test-unit bench bench-wrk bench-peers bench-pgq clean fuzz fuzz-build chaos FORCE
all: deps
	@$(MAKE) --no-print-directory $(BUILD)/silt

FORCE:

deps:
	@scripts/deps.sh

$(BUILD)/silt: $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# The names of the embedded files, rewritten only when the set changes: make
# rebuilds for a newer prerequisite, never for one that is gone, so without
# it a removed or renamed migration stayed embedded.
$(BUILD)/gen/%.list: FORCE
	@mkdir -p $(dir $@)
	@echo '$(if $(filter embed_sql,$*),$(SQL),$(WEB))' | cmp -s - $@ || \
	    echo '$(if $(filter embed_sql,$*),$(SQL),$(WEB))' > $@

$(BUILD)/gen/embed_sql.c: $(SQL) sql/functions/ORDER scripts/embed.sh $(BUILD)/gen/embed_sql.list
	@mkdir -p $(dir $@)
	{ scripts/embed.sh embed_migrations $(MIGRATIONS) && scripts/embed.sh embed_functions_before $(FUNCS_BEFORE) && \
	  scripts/embed.sh embed_functions $(FUNCS) && scripts/embed.sh embed_bridge sql/bridge_to_baseline.sql; } > $@

$(BUILD)/gen/embed_sql.o: $(BUILD)/gen/embed_sql.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/gen/embed_web.c: $(WEB) scripts/embed.sh $(BUILD)/gen/embed_web.list
	@mkdir -p $(dir $@)
	scripts/embed.sh --bytes embed_web $(WEB) > $@

$(BUILD)/gen/embed_web.o: $(BUILD)/gen/embed_web.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/unit_tests: $(UNIT:%.c=$(BUILD)/%.o) $(BUILD)/tests/harness.o $(LIBOBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/integration_tests: $(INTEG:%.c=$(BUILD)/%.o) $(BUILD)/tests/harness.o $(LIBOBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -MMD -MP -c -o $@ $<

# make run: a private cluster under ./var unless PG_HOST or DATABASE_URL is set.
run: all
	@scripts/run.sh $(BUILD)/silt

test:
	@scripts/deps.sh test
	@$(MAKE) --no-print-directory $(BUILD)/silt $(BUILD)/unit_tests $(BUILD)/integration_tests
	@scripts/test.sh $(BUILD)

# make test-unit: the unit tests alone (no database, a few seconds).
test-unit:
	@$(MAKE) --no-print-directory $(BUILD)/unit_tests
	@$(BUILD)/unit_tests

bench: all
	@scripts/bench.sh $(BUILD)/silt

# make bench-wrk: silt bench against wrk and bench/*.lua, scenario by
# scenario (docs/performance.md); BENCH_WRK_ROUNDS, _SECONDS, _SCENARIOS.
bench-wrk: all
	@scripts/deps.sh bench
	@scripts/bench-wrk.sh $(BUILD)/silt

# make bench-peers: silt beside graphile-worker and pg-boss (installed from
# npm into a scratch folder outside the tree), same scenarios, same cluster
# (docs/performance.md); BENCH_PEERS_ROUNDS, BENCH_PEERS_QUICK=1, ...
bench-peers: all
	@scripts/bench-peers.sh $(BUILD)/silt

# make bench-pgq: silt's log beside PgQ (Debian's postgresql-NN-pgq3) on one
# cluster: produce, consume, both at once (docs/performance.md);
# BENCH_PGQ_ROUNDS, _SECONDS, _PRODUCERS, _CONSUMERS.
bench-pgq: all
	@scripts/bench-pgq.sh $(BUILD)/silt

# make chaos: the long crash-safety run (docs/reliability.md). CHAOS_SECONDS,
# CHAOS_KILLS, CHAOS_MESSAGES, CHAOS_FAST, CHAOS_SEED and CHAOS_ARGS tune it;
# make chaos FAILOVER=1 makes every event a PostgreSQL failover.
chaos: all
	@CHAOS_FAILOVER=$(or $(FAILOVER),$(CHAOS_FAILOVER),0) scripts/chaos.sh $(BUILD)/silt

clean:
	rm -rf build build-asan build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# make fuzz: every target in tests/fuzz, built with clang's libFuzzer and
# ASan/UBSan under build-fuzz (silt's objects too: fuzz_http runs a whole
# server in-process), each run for FUZZ_SECONDS (default 60) by
# scripts/fuzz.sh; a crash, leak, hang or failed invariant fails it.
FUZZ_BUILD ?= build-fuzz
FUZZ_SAN    = -fsanitize=address,undefined,fuzzer-no-link -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZERS    := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/fuzz_*.c))

fuzz:
	@scripts/deps.sh fuzz
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CC=clang OPT="-O1 -g" SAN=1 SANITIZERS="$(FUZZ_SAN)" fuzz-build
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZERS)

fuzz-build: $(FUZZERS:%=$(BUILD)/%)

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(LIBOBJ)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)
