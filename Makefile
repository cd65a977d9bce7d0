# The two commands a new machine needs: `make run` and `make test`. Both install what is
# missing first (scripts/install-deps.sh is quick when everything is there).

SWIFT ?= swift
# ThreadSanitizer builds into its own folder so that it never invalidates the normal build.
TSAN_SCRATCH ?= .build-tsan

.PHONY: deps build run test test-unit test-tsan bench clean

deps:
	@./scripts/install-deps.sh

build: deps
	$(SWIFT) build

## make run: the demo on the built-in task tracker, with its store in ./data/demo.sqlite
run: deps
	$(SWIFT) build --product managedstore
	./.build/debug/managedstore demo --store ./data/demo.sqlite

## make test: every test, then the library tests once more under ThreadSanitizer
test: test-unit test-tsan

test-unit: deps
	$(SWIFT) test

test-tsan: deps
	$(SWIFT) test --sanitize=thread --scratch-path $(TSAN_SCRATCH)

## make bench: the release-built benchmarks (their own package under Benchmarks/)
bench: deps
	cd Benchmarks && $(SWIFT) run -c release managedstore-bench

clean:
	rm -rf .build $(TSAN_SCRATCH) Benchmarks/.build data
