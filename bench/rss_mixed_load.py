"""kilnd's resident memory under a mixed load (issue 52): compiles of new modules, compiles answered
from the cache, artifact downloads and job watches, each in its own client thread, for a while.
Samples kilnd's VmRSS every second; prints it per minute, its peak and its end state (after the
load stops and kilnd has been idle for 30 s).
  bash bench/rss_mixed_load.sh [SECONDS]"""
import os
import sys
import threading
import time

import kiln

address, kilnd_pid, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
mlp = open("compiler/script/testdata/tvm_mlp.py").read()
big = "tests/models/mobilenet_v2.onnx"


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


stop = threading.Event()
counts = {"compiles": 0, "cached compiles": 0, "downloads": 0, "watches": 0, "errors": 0}
lock = threading.Lock()


def count(what):
    with lock:
        counts[what] += 1


def loop(what, body):
    with kiln.Client(address) as client:
        n = 0
        while not stop.is_set():
            try:
                body(client, n)
                count(what)
            except Exception as e:  # a refusal under load is counted, and the load goes on
                count("errors")
                print(f"{what}: {e}", file=sys.stderr)
                time.sleep(1)
            n += 1


def new_module(client, n):  # a module kilnd has not seen: a worker builds it
    client.submit_compile_job(f"# load {os.getpid()} {n}\n" + mlp).wait(timeout=120)


def cached(client, n):  # the same module again: answered from the cache
    client.submit_compile_job(mlp).wait(timeout=120)


with kiln.Client(address) as setup:
    artifact = setup.submit_compile_job(big).wait(timeout=600)
    digest = setup.submit_compile_job(big).artifact_digest


def download(client, n):
    client.download_artifact(digest)


def watch(client, n):  # a job followed event by event as it runs
    job = client.submit_compile_job(f"# watch {os.getpid()} {n}\n" + mlp)
    for _ in job.events(timeout=120):
        pass


threads = [threading.Thread(target=loop, args=(w, b)) for w, b in
           (("compiles", new_module), ("cached compiles", cached), ("downloads", download),
            ("watches", watch))]
samples = []
start = time.time()
for t in threads:
    t.start()
while time.time() - start < seconds:
    samples.append((time.time() - start, rss_mb(kilnd_pid)))
    time.sleep(1)
stop.set()
for t in threads:
    t.join()
time.sleep(30)
end = rss_mb(kilnd_pid)
peak = max(r for _, r in samples)
print(f"kilnd RSS under mixed load for {seconds:.0f} s ({', '.join(f'{v} {k}' for k, v in counts.items())})")
print("| minute | RSS MB |")
print("|---|---|")
for minute in range(int(seconds // 60) + 1):
    at = [r for t, r in samples if minute * 60 <= t < (minute + 1) * 60]
    if at:
        print(f"| {minute} | {at[-1]:.0f} |")
print(f"peak {peak:.0f} MB, end {end:.0f} MB (30 s after the load stopped), "
      f"start {samples[0][1]:.0f} MB")
