#!/bin/bash
# The dashboard's browser test (tests/dashboard_test.py) under Debian's python3, pytest, Selenium,
# chromium and chromium-driver, against the kilnd and kiln-agent given as arguments.
set -euo pipefail
export KILND="$1" KILN_AGENT="$2"
# The Python client, as //client/python:kiln_python makes it, and the suites' process helpers.
export PYTHONPATH="$PWD/client/python:$PWD/client/python/tests"
export HOME="${TEST_TMPDIR:-/tmp}"       # chromium keeps its profile there
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/dashboard_test.py
