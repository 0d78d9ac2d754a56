#!/usr/bin/env bash
# kilnd's /metrics parsed back by a real Prometheus text-format parser (Debian's
# python3-prometheus-client) after a compile and a cache hit: every family has its declared type,
# and the values are the ones the jobs imply.
set -euo pipefail

KILND="$1"
KILN="$2"
WORK="${TEST_TMPDIR:-$(mktemp -d)}"

: >"$WORK/kilnd.log"  # before kilnd starts: the loop below may read it first
"$KILND" --listen 127.0.0.1:0 --metrics-port 0 --store "$WORK/store" >"$WORK/kilnd.log" 2>&1 &
KILND_PID=$!
trap 'kill "$KILND_PID" 2>/dev/null || true' EXIT
port="" metrics_port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/^kilnd: listening on port \([0-9]*\)$/\1/p' "$WORK/kilnd.log")
  metrics_port=$(sed -n 's/^kilnd: metrics on port \([0-9]*\)$/\1/p' "$WORK/kilnd.log")
  [ -n "$port" ] && [ -n "$metrics_port" ] && break
  sleep 0.1
done
[ -n "$metrics_port" ] || { echo "kilnd did not start:"; cat "$WORK/kilnd.log"; exit 1; }

# One compile, then the same again: a cache hit.
"$KILN" compile compiler/script/testdata/tvm_mlp.py --server "127.0.0.1:$port" -o "$WORK/a.kiln"
"$KILN" compile compiler/script/testdata/tvm_mlp.py --server "127.0.0.1:$port" -o "$WORK/b.kiln"

/usr/bin/python3 - "$metrics_port" <<'PY'
import sys
import urllib.request
from prometheus_client.parser import text_string_to_metric_families

text = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10).read().decode()
families = {f.name: f for f in text_string_to_metric_families(text)}

def family(name, kind):
    # The parser names a counter family without its _total suffix.
    f = families.get(name) or families.get(name[:-len("_total")] if name.endswith("_total") else name)
    assert f is not None, "no family %s in:\n%s" % (name, text)
    assert f.type == kind, "%s is a %s, declared %s" % (name, f.type, kind)
    return f

def value(f, suffix="", **labels):
    for s in f.samples:
        if s.name.endswith(suffix) and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError("no sample %s%s %s" % (f.name, suffix, labels))

jobs = family("kiln_jobs", "gauge")
assert value(jobs, state="succeeded") == 2, text
assert value(jobs, state="failed") == 0, text
assert value(family("kiln_cache_hits_total", "counter"), "_total") == 1, text
assert value(family("kiln_cache_misses_total", "counter"), "_total") == 1, text
compile_seconds = family("kiln_compile_seconds", "summary")
assert value(compile_seconds, "_count") == 1, text
assert value(compile_seconds, "_sum") > 0, text
family("kiln_workers_busy", "gauge")
family("kiln_agents_connected", "gauge")
instance = family("kiln_instance_info", "gauge").samples[0].labels
assert instance["database"] == "sqlite" and ":" in instance["instance"], instance
print("metrics: %d families parsed, values as the jobs imply" % len(families))
PY

kill -TERM "$KILND_PID"
wait "$KILND_PID"
trap - EXIT
echo "PASS"
