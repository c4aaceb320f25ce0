# wasm-ccm's entry points; README.md explains them.
CARGO ?= cargo

.PHONY: local demo test guests lint deny go-checks monitoring-checks test-servers control-plane bench

# The real control plane the end-to-end tests and benchmarks run against: kube-apiserver, etcd
# and upstream's cloud-controller-manager of the newest Kubernetes release, and of the oldest
# release still supported for version skew, built from the published Go modules by
# tests/envtest/control-plane/build.sh, once. KUBEBUILDER_ASSETS (or TEST_ASSET_KUBE_APISERVER
# and TEST_ASSET_ETCD) names other binaries; without any, the end-to-end tests say so and are
# skipped, and WASM_CCM_REQUIRE_ENVTEST=1 makes that an error.
CONTROL_PLANE := tests/envtest/control-plane/build.sh
NEWEST_ASSETS := $(lastword $(shell $(CONTROL_PLANE) --print v1.37.2))
SKEW_ASSETS := $(lastword $(shell $(CONTROL_PLANE) --print v1.35.4))
export KUBEBUILDER_ASSETS ?= $(NEWEST_ASSETS)
# The controllers' end-to-end tests, run again on the skew release: every API the controllers
# use (nodes, Services and their status, events, leases).
SKEW_TESTS := controllers::real_apiserver replicas::real_apiserver

# The debug binary as the tests build it: `--examples` (the workspace has none) resolves features
# as a test build does, dev-dependencies' included, so `make test` after `make local` compiles
# none of the crates `local` did again. The release image is built without them.
WASM_CCM := $(or $(CARGO_TARGET_DIR),target)/debug/wasm-ccm
BUILD_WASM_CCM := $(CARGO) build --locked --workspace --bin wasm-ccm --examples

## Build the fake provider, then run wasm-ccm on an embedded local cluster with it.
local:
	providers/build.sh --only provider-fake
	$(BUILD_WASM_CCM)
	$(WASM_CCM) local

## Build the fake provider, then load it and call it.
demo:
	providers/build.sh --only provider-fake
	$(BUILD_WASM_CCM)
	$(WASM_CCM) provider call info --provider target/wasm/provider_fake.wasm
	$(WASM_CCM) provider call instance-metadata '{"metadata": {"name": "node-a"}}' \
		--provider target/wasm/provider_fake.wasm --cloud-config providers/fake/examples/demo.json

## Set up and run the whole test suite, with the format and lint checks.
test: guests test-servers control-plane lint deny go-checks monitoring-checks
	$(CARGO) build --locked --workspace --bins --benches
	$(CARGO) test --locked --workspace
	$(CARGO) test --locked --workspace --test integration -- --ignored --test-threads=1
	TEST_ASSET_KUBE_APISERVER=$(SKEW_ASSETS)/kube-apiserver TEST_ASSET_ETCD=$(SKEW_ASSETS)/etcd \
		$(CARGO) test --locked -p wasm-ccm --test integration -- $(SKEW_TESTS)

## Build every provider and test guest into a component under target/wasm.
guests:
	providers/build.sh

## Run the benchmarks; tests/bench/RESULTS.md records their results.
bench: guests test-servers control-plane
	$(CARGO) build --locked --release -p wasm-ccm
	$(CARGO) bench --locked -p wasm-ccm-bench

## Install the servers tests run against (an AWS API emulator, an OCI registry) and the tools
## they run (helm, promtool).
test-servers:
	tests/setup.sh

## Build the real control plane of each supported release (once; cached).
control-plane:
	$(CONTROL_PLANE)

## Check the Go SDK and Go providers: gofmt, go vet, their native tests.
go-checks: guests
	guest-sdk-go/check.sh

## Check the alerting rules with promtool: their syntax, and their unit tests.
monitoring-checks: test-servers
	promtool check rules deploy/monitoring/rules.yaml
	promtool test rules deploy/monitoring/rules_test.yaml

## Check the dependency graph against deny.toml: licences, duplicate versions, sources.
deny: test-servers
	"$$(tests/tools/install-signing-tools.sh --print CARGO_DENY)" check bans licenses sources

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --workspace --all-targets -- -D warnings
	$(CARGO) clippy --locked -p wasm-ccm --no-default-features -- -D warnings
