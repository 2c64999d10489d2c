# deskbox: `make up` runs a session, `make test` runs every test, `make bench` measures.
.PHONY: up test bench deps clean fuzz soak flakes docs-shots image image-apps image-runner container-test-apps

ARGS ?=

deps:
	@scripts/install-deps

up: deps
	.venv/bin/deskbox up $(ARGS)

test: deps
	.venv/bin/ruff check deskbox tests bench
	.venv/bin/python -m pytest -p no:cacheprovider $(ARGS)

bench: deps
	.venv/bin/python -m bench $(ARGS)
	.venv/bin/python -m bench.bridge
	.venv/bin/python -m bench.scene
	.venv/bin/python -m bench.container
	.venv/bin/python -m bench.reset
	.venv/bin/python -m bench.sandbox
	.venv/bin/python -m bench.osworld
	.venv/bin/python -m bench.accessibility
	.venv/bin/python -m bench.full_read
	.venv/bin/python -m bench.execute
	.venv/bin/python -m bench.apps
	.venv/bin/python -m bench.toolset
	.venv/bin/python -m bench.client
	.venv/bin/python -m bench.view
	.venv/bin/python -m bench.trace
	.venv/bin/python -m bench.run
	.venv/bin/python -m bench.fleet
	.venv/bin/python -m bench.vscode
	.venv/bin/python -m bench.idle $(if $(IDLE_BASELINE),--baseline $(IDLE_BASELINE))
	$(if $(OSWORLD_EXAMPLES),.venv/bin/python -m bench.noop --no-build --examples $(OSWORLD_EXAMPLES),@echo "bench.noop: skipped: OSWORLD_EXAMPLES=PATH/evaluation_examples (OSWorld's task set: not in this repository) runs it")
	.venv/bin/python -m bench.measurements

# The fuzz tests with every schemathesis phase and many examples per operation, a new
# seed each run (make test runs them bounded, with the seed of the commit).
fuzz: deps
	DESKBOX_FUZZ_EXAMPLES=$${DESKBOX_FUZZ_EXAMPLES:-100} DESKBOX_FUZZ_PHASES=examples,coverage,fuzzing,stateful \
	DESKBOX_FUZZ_SEED=$${DESKBOX_FUZZ_SEED:-$$(date +%s)} DESKBOX_CHAOS_ROUNDS=$${DESKBOX_CHAOS_ROUNDS:-100} \
	.venv/bin/python -m pytest -p no:cacheprovider tests/test_fuzz.py tests/test_chaos.py $(ARGS)

# The whole suite several times in a row on a fresh clone of HEAD, each in a new random
# order (seed printed): flaky tests found, not waited for. RUNS=5 by default.
flakes:
	scripts/flakes

# The pictures in the docs, taken by the tests that check what they show
# (docs/images/inspector.png: tests/test_inspect.py).
docs-shots: deps
	mkdir -p docs/images
	DESKBOX_DOCS_SHOTS=docs/images .venv/bin/python -m pytest -q tests/test_inspect.py -k follows_the_screen

# One session under a steady mixed load for an hour: latency per endpoint, errors, memory
# growth (bench/results/soak.md). ARGS="--minutes 10" for a shorter one.
soak: deps
	.venv/bin/python -m bench.soak $(ARGS)

# The images: the base one (deskbox) and the one with the apps OSWorld's tasks use
# (deskbox-apps: LibreOffice, GIMP, VLC, Thunderbird, gedit, a terminal, a file manager).
image:
	scripts/container-build deskbox

image-apps:
	scripts/container-build deskbox-apps --build-arg DESKBOX_APPS=1

# `deskbox run` with OSWorld's graders and no desktop: what a Job on a cluster runs
# (deploy/run/job.yaml).
image-runner:
	scripts/container-build deskbox-runner --target runner

# The apps image in OSWorld mode through its published ports: Calc, Writer, Impress, VLC, GIMP
# (tests/container/apps.py).
container-test-apps: deps image-apps
	.venv/bin/python tests/container/apps.py --image deskbox-apps

clean:
	rm -rf .venv bench/results

# Builds the container image and drives a session in it through its published ports
# (installs podman and makes the base image where needed); see tests/container/drive.py.
# Then OSWorld's provider interface over podman, with OSWorld's own DesktopEnv
# (tests/container/provider.py); the Kubernetes back end under podman kube play and a
# run inside that cluster: deploy/run/'s Job from the runner image claiming two session
# pods by their addresses (tests/container/cluster.py); a run stopped by Ctrl+C, twice,
# or SIGTERM leaves no container, and one removes what a runner that died left
# (tests/container/interrupts.py); last, a run paces its sessions: CPU weights, the wait
# for the apps, one admission slot (tests/container/pacing.py).
.PHONY: container-test
container-test: deps
	scripts/container-build deskbox
	scripts/container-build deskbox-runner --target runner
	python3 tests/container/drive.py --image deskbox
	.venv/bin/python tests/container/provider.py --image deskbox
	.venv/bin/python tests/container/cluster.py --image deskbox --runner-image deskbox-runner
	.venv/bin/python tests/container/interrupts.py --image deskbox
	.venv/bin/python tests/container/pacing.py --image deskbox
