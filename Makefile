# The two commands a new machine needs: `make run` and `make test`. Both install what is
# missing first (scripts/install-deps.sh is quick when everything is there).

SWIFT ?= swift
# ThreadSanitizer builds into its own folder so that it never invalidates the normal build.
TSAN_SCRATCH ?= .build-tsan
PORT ?= 8080
# What the builds of packages that are only built and run (the example, the Swift client) are
# given: no index store, which only an editor reads, and no debug information, which only a
# debugger does (a crash still names its functions): a quarter of a clean build. Not for the
# test builds: on Linux, SwiftPM finds the tests through the index store.
SWIFT_BUILD_FLAGS ?= --disable-index-store -Xswiftc -gnone

.PHONY: deps build server run demo test test-unit test-sqlite-store test-layers test-example build-tsan test-dictionary-store test-postgres-store test-tsan test-openapi test-fuzz test-schemathesis fuzz openapi bench bench-http bench-idempotency bench-check image docker-check test-python-client test-swift-client clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

## make run: the server on the built-in task tracker, store in ./data/demo.sqlite, on 127.0.0.1:$(PORT)
run: deps
	$(SWIFT) build -c release --product managedstore
	./.build/release/managedstore serve $(if $(MODEL),--model $(MODEL),--demo) --store ./data/demo.sqlite --port $(PORT)

## make demo: the library demo (a background context inserting while another reads)
demo: deps
	$(SWIFT) build --product managedstore
	./.build/debug/managedstore demo --store ./data/demo.sqlite

## make test: every test, the OpenAPI document's validity, a bounded HTTP fuzz and schemathesis run
## against the server, then the library tests again under ThreadSanitizer
TEST_STAGES = test-openapi test-sqlite-store test-layers test-dictionary-store test-postgres-store test-example test-fuzz test-live \
              test-schemathesis test-python-client test-swift-client test-tsan
# Each stage in turn, and what each took; ThreadSanitizer's build in the background meanwhile
# (scripts/test-stages.sh).
test: deps
	@MAKE="$(MAKE)" ./scripts/test-stages.sh $(TEST_STAGES)

## make test-unit: the library and server suites on each store (SQLite, the dictionary store, PostgreSQL)
test-unit: test-sqlite-store test-dictionary-store test-postgres-store

# Every suite, on SQLite.
test-sqlite-store: deps
	SWIFT=$(SWIFT) ./scripts/test-unit.sh

## make test-layers: each library target built alone, importing only the targets it declares
## (the server cannot name a store: scripts/check-layers.sh)
test-layers: deps
	SWIFT=$(SWIFT) ./scripts/check-layers.sh

# The library's context, fault, save, conflict, merge-policy and aggregate suites again, their in-memory
# containers on the dictionary store (Tests/Support): a second implementation of the store
# protocol, the proof that the contexts need nothing of SQLite's.
DICTIONARY_SUITES = AggregateTests|ContextTests|NestedContextTests|DeleteRuleTests|OneToOneTests|ValidationTests|FetchTests|FetchBatchSizeTests|PaginationTests|StoredObjectRowTests|ConflictTests|MergePolicyTests|ContextNotificationTests|BatchRequestTests|GroupCommitTests|AsynchronousFetchTests|IdempotentSaveTests|PrimaryKeyTests|WriteQueueMergeTests|OrderedRelationshipTests|RelationshipCountTests|OneWayRelationshipTests|EntityInheritanceTests|RelationshipToParentTests|MergedInsertTests
test-dictionary-store: deps
	MANAGEDSTORE_TEST_STORE=dictionary SWIFT=$(SWIFT) ./scripts/test-unit.sh --filter 'ManagedStoreTests\.($(DICTIONARY_SUITES))/'

# The same suites and the history, query-generation and predicate suites, with their
# containers in PostgreSQL, each in a schema of its own, on a throw-away cluster on loopback
# (scripts/postgres-cluster.sh), removed afterwards; what only that store has; and every HTTP
# suite, its in-memory servers each on a schema of their own, with three servers over one
# database (MultiServerTests). Suites whose servers are on SQLite whatever the run (store files,
# server processes given a path) skip themselves here (`.sqliteWhateverTheRun`).
POSTGRES_SUITES = $(DICTIONARY_SUITES)|PersistentHistoryTests|FetchedResultsControllerTests|QueryGenerationTests|PredicateDifferentialTests|PredicateInjectionTests|PostgreSQLStoreTests|PostgreSQLAggregateTests|PostgreSQLHistoryRunTests|PostgreSQLGroupCommitTests|PostgreSQLDeadlineTests|StoreValueParityTests|LightweightMigrationTests|MigrationRefusalTests|InheritanceMigrationTests
# The model-based walks stop after this many seconds a model here (3,000 steps or 60 s on SQLite):
# PostgreSQL answers each request later, and the SQLite run has walked the whole way.
POSTGRES_WALK_SECONDS ?= 30
test-postgres-store: deps
	@dir=$$(mktemp -d /tmp/managedstore-pg.XXXXXX); \
	trap './scripts/postgres-cluster.sh stop '"$$dir" EXIT; \
	uri=$$(./scripts/postgres-cluster.sh start "$$dir") && \
	MANAGEDSTORE_TEST_STORE=postgres MANAGEDSTORE_TEST_POSTGRES="$$uri" MANAGEDSTORE_MODEL_SECONDS=$(POSTGRES_WALK_SECONDS) SWIFT=$(SWIFT) \
	    ./scripts/test-unit.sh --filter 'ManagedStoreTests\.($(POSTGRES_SUITES))/' --filter ManagedStoreServerTests

## make test-example: Examples/ReadingList built as a user builds it (a path dependency, an
## .xcdatamodeld, the typed-views plugin) and run
test-example: deps
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" ./scripts/example-package.sh

# The library's suites under ThreadSanitizer, built from the library alone (MANAGEDSTORE_LIBRARY_ONLY:
# Package.swift leaves out the server and its tests), but for those that run on one thread
# through thousands of generated cases (the SQL beside the in-memory evaluator, the predicate
# fuzzer, injections, descending pages beside the plain statement) or read source files (the
# layering): no race to find there, and over half of the run's time.
TSAN_SKIPPED_SUITES = PredicateDifferentialTests|PredicateFuzzTests|PredicateInjectionTests|GroupedOrderFetchTests|LayeringTests
test-tsan: deps
	MANAGEDSTORE_LIBRARY_ONLY=1 MANAGEDSTORE_STRESS_SECONDS=2 SWIFT=$(SWIFT) \
	    ./scripts/test-unit.sh --sanitize=thread --scratch-path $(TSAN_SCRATCH) --filter ManagedStoreTests \
	    --skip 'ManagedStoreTests\.($(TSAN_SKIPPED_SUITES))/'

# What test-tsan builds, alone (`make test` runs it in the background ahead of test-tsan).
build-tsan: deps
	MANAGEDSTORE_LIBRARY_ONLY=1 $(SWIFT) build --build-tests --sanitize=thread --scratch-path $(TSAN_SCRATCH)

# The debug server binary (.build/debug/managedstore) that the fuzzer and schemathesis start.
server: deps
	$(SWIFT) build --product managedstore

# A bounded slice of the HTTP crash fuzzer (scripts/fuzz/http_fuzz.py): a fixed seed, so a
# failure here reproduces with the same command; the seed, the failing requests and a
# reproduction file are printed.
TEST_FUZZ_SEED ?= 1
TEST_FUZZ_REQUESTS ?= 3000
TEST_FUZZ_SECONDS ?= 60
test-fuzz: server
	python3 scripts/fuzz/http_fuzz.py --seed $(TEST_FUZZ_SEED) --requests $(TEST_FUZZ_REQUESTS) --seconds $(TEST_FUZZ_SECONDS)

## make fuzz: the long fuzz run (FUZZ_REQUESTS requests or FUZZ_SECONDS seconds, a new seed unless
## FUZZ_SEED is given); after a failure it restarts the server and goes on, and lists every distinct one
FUZZ_REQUESTS ?= 200000
FUZZ_SECONDS ?= 1200
FUZZ_SEED ?=
fuzz: server
	python3 scripts/fuzz/http_fuzz.py $(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) --requests $(FUZZ_REQUESTS) --seconds $(FUZZ_SECONDS) --keep-going

# Schemathesis against the OpenAPI document the server serves (scripts/schemathesis.sh).
test-schemathesis: server
	@python3 -c "import schemathesis" 2>/dev/null || python3 -m pip install -q "schemathesis>=4,<5"
	./scripts/schemathesis.sh

## a typed Python client generated from the served /v1/openapi.json (openapi-python-client), used
## for an insert/fetch/get/patch/delete round against the demo model
test-python-client: server
	@command -v openapi-python-client >/dev/null || python3 -m pip install -q "openapi-python-client>=0.21,<1"
	@python3 -c "import yaml" 2>/dev/null || python3 -m pip install -q pyyaml
	python3 scripts/client/python_client_round.py

## a typed Swift client generated from the served documents (Apple's swift-openapi-generator, a
## package of its own under scripts/client/swift) for a round against the demo model and a model
## with every attribute type; any warning of the generator fails it
test-swift-client: server
	SWIFT=$(SWIFT) SWIFT_BUILD_FLAGS="$(SWIFT_BUILD_FLAGS)" ./scripts/client/swift_client_round.sh

test-openapi: deps
	@python3 -c "import yaml, openapi_spec_validator" 2>/dev/null || python3 -m pip install -q pyyaml openapi-spec-validator
	python3 scripts/openapi.py check

## make openapi: regenerate the server's copy of openapi/openapi.yaml after editing it
openapi:
	python3 scripts/openapi.py generate

## make bench: the release-built library benchmarks (their own package under Benchmarks/)
bench: deps
	cd Benchmarks && $(SWIFT) run -c release managedstore-bench

## make bench-check: the guard before saying an issue is resolved (not in CI): GET, POST and an
## NDJSON import against their C ceilings for about a minute, the library's insert and 3-clause
## fetch against raw SQLite (managedstore-bench --check), each ratio beside its goal and the
## last one recorded in Benchmarks/last-check.txt (which it rewrites: commit it)
bench-check: deps
	Benchmarks/http/bench-check.sh

## make bench-idempotency: POST inserts with an Idempotency-Key each against without, alternating wrk runs
bench-idempotency: deps
	Benchmarks/http/idempotency.sh

## make bench-http: the HTTP benchmark with wrk on loopback (DURATION=10s by default)
bench-http: deps
	./Benchmarks/http/run.sh

## make image: the server's container image from source (docker/Dockerfile: the official Swift
## image builds it, Debian 12 slim runs it). ENGINE=podman to choose; IMAGE_BUILD_FLAGS for the engine.
IMAGE ?= managedstore
STATIC_SCRATCH ?= .build-static
ENGINE ?= $(shell command -v docker || command -v podman || echo docker)
image:
	$(ENGINE) build $(IMAGE_BUILD_FLAGS) -t $(IMAGE) -f docker/Dockerfile .

## make docker-check: docker/Dockerfile's runtime stage built for real with podman around a binary
## built here, on a debian:bookworm-slim made with debootstrap, with a start/ready/write/read/stop
## check inside the build (scripts/docker-check.sh; needs root)
docker-check: deps
	SWIFT=$(SWIFT) STATIC_SCRATCH=$(STATIC_SCRATCH) ./scripts/docker-check.sh

clean:
	rm -rf .build $(TSAN_SCRATCH) $(STATIC_SCRATCH) Benchmarks/.build data

## make test-live: a short seeded run of the live-query walk (scripts/live/live_walk.py) against the real server
.PHONY: test-live live-walk
TEST_LIVE_SEED ?= 1
TEST_LIVE_COMMITS ?= 300
test-live: server
	python3 -m unittest discover -s scripts/live -p 'test_*.py'
	scripts/live/readme_eventsource.sh
	python3 scripts/live/live_walk.py --seed $(TEST_LIVE_SEED) --commits $(TEST_LIVE_COMMITS) --seconds 120 --writers 8 --faults

## make live-walk: the long run (LIVE_COMMITS commits, a new seed unless LIVE_SEED is given)
LIVE_COMMITS ?= 100000
LIVE_SEED ?=
live-walk: server
	python3 scripts/live/live_walk.py $(if $(LIVE_SEED),--seed $(LIVE_SEED)) --commits $(LIVE_COMMITS) --seconds 7200 --writers 16 --faults
