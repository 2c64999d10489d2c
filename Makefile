# deskbox: `make up` runs a session, `make test` runs every test, `make bench` measures.
.PHONY: up test bench deps clean

ARGS ?=

deps:
	@scripts/install-deps

up: deps
	.venv/bin/deskbox up $(ARGS)

test: deps
	.venv/bin/ruff check services tests bench
	.venv/bin/python -m pytest -p no:cacheprovider $(ARGS)

bench: deps
	.venv/bin/python -m bench $(ARGS)
	.venv/bin/python -m bench.bridge
	.venv/bin/python -m bench.scene
	.venv/bin/python -m bench.container

clean:
	rm -rf .venv bench/results

# Builds the container image and drives a session in it through its published ports
# (installs podman and makes the base image where needed); see tests/container/drive.py.
.PHONY: container-test
container-test:
	scripts/container-build deskbox
	python3 tests/container/drive.py --image deskbox
