# wasm-ccm's entry points; README.md explains them.
CARGO ?= cargo

.PHONY: local demo test guests lint go-checks test-servers bench

# The real control plane the end-to-end tests also run against (tests/envtest):
# kube-apiserver from ../shared/envtest beside the repository, etcd from Debian.
# Without them those tests say so and are skipped; WASM_CCM_REQUIRE_ENVTEST=1
# makes that an error.
ENVTEST_DIR ?= $(abspath ../shared/envtest)
ifneq ($(wildcard $(ENVTEST_DIR)/kube-apiserver),)
export TEST_ASSET_KUBE_APISERVER ?= $(ENVTEST_DIR)/kube-apiserver
export TEST_ASSET_ETCD ?= /usr/bin/etcd
endif

## Build the providers, then run wasm-ccm on an embedded local cluster with the fake provider.
local: guests
	$(CARGO) run --locked -p wasm-ccm -- local

## Build the providers, then load the fake provider and call it.
demo: guests
	$(CARGO) run --locked -p wasm-ccm -- provider call info --provider target/wasm/provider_fake.wasm
	$(CARGO) run --locked -p wasm-ccm -- provider call instance-metadata '{"metadata": {"name": "node-a"}}' \
		--provider target/wasm/provider_fake.wasm --cloud-config providers/fake/examples/demo.json

## Set up and run the whole test suite, with the format and lint checks.
test: guests test-servers lint go-checks
	$(CARGO) build --locked --workspace --bins --benches
	$(CARGO) test --locked --workspace
	$(CARGO) test --locked --workspace --test integration -- --ignored --test-threads=1

## Build every provider and test guest into a component under target/wasm.
guests:
	providers/build.sh

## Run the benchmarks; tests/bench/RESULTS.md records their results.
bench: guests test-servers
	$(CARGO) build --locked --release -p wasm-ccm
	$(CARGO) bench --locked -p wasm-ccm-bench

## Install the servers tests run against (an AWS API emulator, an OCI registry).
test-servers:
	tests/setup.sh

## Check the Go SDK and Go providers: gofmt, go vet, their native tests.
go-checks: guests
	guest-sdk-go/check.sh

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked -p wasm-ccm --no-default-features -- -D warnings
