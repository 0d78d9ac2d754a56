"""Real kilnd and kiln-agent processes for the Python suites (the binaries in $KILND and
$KILN_AGENT), each logging to a file in `work`."""
import os
import re
import subprocess
import time


def wait_for(path, pattern, timeout=30):
    """The first match of `pattern` in the file at `path`, waiting up to `timeout` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                m = re.search(pattern, f.read())
            if m:
                return m
        time.sleep(0.05)
    raise AssertionError(f"{pattern!r} never appeared in {path}")


def start_kilnd(work, *flags):
    """kilnd on free ports with its store in `work`: (process, gRPC address, HTTP port)."""
    log = os.path.join(work, "kilnd.log")
    with open(log, "w") as out:
        kilnd = subprocess.Popen([os.environ["KILND"], "--listen", "127.0.0.1:0", "--store",
                                  os.path.join(work, "store"), "--metrics-port", "0", *flags],
                                 stdout=out, stderr=subprocess.STDOUT)
    port = wait_for(log, r"listening on port (\d+)").group(1)
    http_port = wait_for(log, r"metrics on port (\d+)").group(1)
    return kilnd, f"127.0.0.1:{port}", http_port


def start_agent(work, address, *flags, key="cpu"):
    """An agent of device `key`, once it has registered."""
    log = os.path.join(work, "agent.log")
    with open(log, "w") as out:
        # kilnd signs what it builds with the key it made in its store; the agent trusts it.
        agent = subprocess.Popen([os.environ["KILN_AGENT"], "--server", address, "--device-key",
                                  key, "--cache-dir", os.path.join(work, "agent"),
                                  "--trusted-keys",
                                  os.path.join(work, "store", "signing_key.pem.pub"), *flags],
                                 stdout=out, stderr=subprocess.STDOUT)
    wait_for(log, r"registered as")
    return agent


def stop(*processes):
    for p in processes:
        p.terminate()
        p.wait(timeout=30)
