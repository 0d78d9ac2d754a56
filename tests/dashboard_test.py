"""kilnd's dashboard in a real headless Chromium (Debian's chromium and chromium-driver, driven by
Selenium), against a real kilnd with client tokens and a real agent: the page asks for a token,
lists jobs and follows a submitted one to its end, shows a tune job's curve and per-task table and
a profile's timings, lists the devices; the API refuses requests without a valid token. Each
page's screenshot is kept as a test output (TEST_UNDECLARED_OUTPUTS_DIR)."""
import json
import os
import subprocess
import tempfile
import urllib.error
import urllib.request

import numpy as np
import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import kiln
from kiln_processes import start_agent, start_kilnd, stop

CLIENT_TOKEN = "dashboard-test-client-token"
OUT = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", tempfile.gettempdir())


def _private(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


@pytest.fixture(scope="module")
def cluster():
    work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    _private(os.path.join(work, "client.tokens"), f"{CLIENT_TOKEN} name=alice\n")
    _private(os.path.join(work, "agent.tokens"), "dashboard-test-agent-token name=board keys=cpu\n")
    _private(os.path.join(work, "agent.token"), "dashboard-test-agent-token\n")
    kilnd, address, http_port = start_kilnd(
        work, "--metrics-address", "::", "--client-tokens", os.path.join(work, "client.tokens"),
        "--agent-tokens", os.path.join(work, "agent.tokens"))
    agent = start_agent(work, address, "--token", os.path.join(work, "agent.token"))
    yield {"grpc": address, "http": f"http://127.0.0.1:{http_port}",
           "http6": f"http://[::1]:{http_port}"}
    stop(agent, kilnd)


@pytest.fixture(scope="module")
def client(cluster):
    with kiln.Client(cluster["grpc"], token=CLIENT_TOKEN) as c:
        yield c


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _until(browser, condition, timeout=60):
    # The page redraws every second: an element found a moment ago may be gone.
    return WebDriverWait(browser, timeout, poll_frequency=0.1,
                         ignored_exceptions=(StaleElementReferenceException,)).until(
                             lambda d: condition(d))


def _texts(browser, selector):
    """The text of every element `selector` matches, read at one instant (the page redraws)."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.textContent);",
        selector)


def _attribute(browser, selector, name):
    return browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e && e.getAttribute(arguments[1]);",
        selector, name)


def _shot(browser, name):
    browser.save_screenshot(os.path.join(OUT, f"dashboard_{name}.png"))


def _row_state(browser, job_id):
    states = _texts(browser, f"tr.job[data-id='{job_id}'] td:nth-child(3)")
    return states[0] if states else None


def test_the_api_refuses_requests_without_a_valid_token(cluster):
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": CLIENT_TOKEN}):
        request = urllib.request.Request(cluster["http"] + "/api/jobs", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401
        assert "token" in json.load(refused.value)["error"].lower()
    ok = urllib.request.Request(cluster["http6"] + "/api/status",
                                headers={"Authorization": f"Bearer {CLIENT_TOKEN}"})
    with urllib.request.urlopen(ok, timeout=10) as response:  # over IPv6 too
        assert json.load(response)["agents_connected"] == 1
    with urllib.request.urlopen(cluster["http"] + "/metrics", timeout=10) as response:
        assert b"kiln_agents_connected 1" in response.read()


def test_with_tls_the_http_port_speaks_https_with_the_daemons_certificate(tmp_path):
    d = str(tmp_path)
    subprocess.run(
        "set -e; openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=kiln-test-ca "
        "-keyout ca.key -out ca.pem 2>/dev/null; "
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost' > san.ext; "
        "openssl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key "
        "-out server.csr 2>/dev/null; "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile san.ext -out server.pem 2>/dev/null", shell=True, cwd=d, check=True)
    kilnd, _, port = start_kilnd(d, "--tls-cert", os.path.join(d, "server.pem"), "--tls-key",
                                 os.path.join(d, "server.key"))
    try:
        import ssl
        context = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/metrics", context=context,
                                    timeout=10) as response:
            assert b"kiln_jobs" in response.read()
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    finally:
        stop(kilnd)


def test_pages_follow_jobs_tunes_and_devices(cluster, client, browser):
    compiled = client.submit_compile_job("tests/models/tiny_resnet.onnx").wait()
    profile = client.submit_profile_job(compiled, device="cpu", repeat=5, per_kernel=True)
    profile.wait()
    tune = client.submit_tune_job("tests/models/mlp_784_128_10.onnx", device="cpu", trials=8)
    tune.wait()
    rng = np.random.default_rng(0)
    quantize = client.submit_quantize_job(
        "tests/models/tiny_resnet.onnx",
        [rng.standard_normal((1, 3, 32, 32), np.float32) for _ in range(4)])
    report = quantize.wait()

    # The page itself loads for anyone, then asks for the token; a wrong one is refused.
    browser.get(cluster["http"] + "/")
    _until(browser, lambda d: d.find_element(By.ID, "login").is_displayed())
    browser.find_element(By.ID, "token").send_keys("wrong")
    browser.find_element(By.ID, "login-button").click()
    _until(browser, lambda d: "not a client token" in _texts(d, "#login-error")[0])
    _shot(browser, "login")
    token = browser.find_element(By.ID, "token")
    token.clear()
    token.send_keys(CLIENT_TOKEN)
    browser.find_element(By.ID, "login-button").click()
    _until(browser, lambda d: _row_state(d, compiled.id) == "succeeded")
    assert "workers" in _texts(browser, "#status")[0]

    # A job submitted now appears, and its state changes live to succeeded.
    big = client.submit_compile_job("tests/models/mobilenet_v2.onnx")
    seen = []
    def done(d):
        state = _row_state(d, big.id)
        if state and (not seen or seen[-1] != state):
            seen.append(state)
        return state == "succeeded"
    _until(browser, done, timeout=120)
    assert seen[0] in ("queued", "running") and seen[-1] == "succeeded", seen
    _shot(browser, "jobs")

    # The tune job's page: the curve as an SVG polyline and the per-task table.
    browser.get(cluster["http"] + f"/#/job/{tune.id}")
    _until(browser, lambda d: _attribute(d, "#tune-curve polyline", "points"))
    points = _attribute(browser, "#tune-curve polyline", "points")
    assert len(points.split()) == len(tune.proto.tune.curve) >= 2
    tasks = _texts(browser, "tr.tune-task")
    assert len(tasks) == 2 and "fused_matmul" in tasks[0]
    assert _texts(browser, "tr.event")
    _shot(browser, "tune")

    # The quantize job's page: the output's SQNR and every int8 layer's, the lowest marked.
    browser.get(cluster["http"] + f"/#/job/{quantize.id}")
    _until(browser, lambda d: _texts(d, "tr.quantize-layer"))
    layers = _texts(browser, "tr.quantize-layer")
    assert len(layers) == len(report["layers"]) > 3
    assert sum("lowest" in row for row in layers) == 1
    output = _texts(browser, "tr.quantize-output")[0]
    assert f"{quantize.refresh().proto.quantize.outputs[0].sqnr_db:.1f}" in output, output
    _shot(browser, "quantize")

    # A profile's timings; the devices page with the agent's attributes.
    browser.get(cluster["http"] + f"/#/job/{profile.id}")
    _until(browser, lambda d: _texts(d, "#timings td"))
    median = _texts(browser, "#timings td")[0]
    assert float(median) > 0
    _until(browser, lambda d: _texts(d, "tr.kernel"))
    kernels = _texts(browser, "tr.kernel")
    assert any("relax.matmul" in k for k in kernels), kernels
    assert all("float" in k for k in kernels), kernels  # a float model: no int8 kernel
    _shot(browser, "profile")
    browser.get(cluster["http"] + "/#/devices")
    _until(browser, lambda d: _texts(d, "tr.device[data-key='cpu']"))
    row = _texts(browser, "tr.device[data-key='cpu']")[0]
    assert "healthy" in row and os.uname().machine in row
    _shot(browser, "devices")
