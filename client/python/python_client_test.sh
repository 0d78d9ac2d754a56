#!/bin/bash
# The Python client's tests (client/python/tests) under Debian's python3 and pytest, against the
# kilnd and kiln-agent binaries given as arguments; the package is the one //client/python:
# kiln_python assembles.
set -euo pipefail
export KILND="$1" KILN_AGENT="$2"
# bazel-bin's copy (the genrule's outputs), and the suites' process helpers.
export PYTHONPATH="$PWD/client/python:$PWD/client/python/tests"
# Debian's interpreter, whose dist-packages hold python3-grpcio, -numpy and -pytest.
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider client/python/tests
