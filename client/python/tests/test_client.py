"""The Python client against a real kilnd and kiln-agent on loopback (no mocks): compile from a
path, ONNX bytes and TVMScript text; run and profile on the agent; tune; quantize; list;
errors."""
import os
import tempfile

import numpy as np
import pytest

import kiln
from kiln_processes import start_agent, start_kilnd, stop

MODELS = "tests/models"
CNN = os.path.join(MODELS, "tiny_resnet.onnx")
MLP = os.path.join(MODELS, "mlp_784_128_10.onnx")


@pytest.fixture(scope="module")
def server():
    work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
    kilnd, address, _ = start_kilnd(work)
    agent = start_agent(work, address)
    yield address
    stop(agent, kilnd)


@pytest.fixture
def client(server):
    with kiln.Client(server) as c:
        yield c


def test_compile_run_and_profile_a_cnn_on_the_agent(client, tmp_path):
    job = client.submit_compile_job(CNN)
    states = [e["state"] for e in job.events()]
    assert states[-1] == "succeeded", states
    compiled = job.wait()
    assert compiled.kind == "compile" and compiled.status == "succeeded"
    assert len(compiled.artifact_digest) == 64
    path = compiled.download_artifact(tmp_path / "cnn.kiln")
    assert os.path.getsize(path) > 0
    # The download is checked against its digest (the manifest included), as the C++ side does.
    with open(path, "rb") as f:
        data = f.read()
    assert kiln.content_digest(data) == compiled.artifact_digest
    assert kiln.content_digest(data.replace(b"main", b"mai2", 1)) != compiled.artifact_digest

    x = np.load(os.path.join(MODELS, "tiny_resnet.input.npy"))
    want = np.load(os.path.join(MODELS, "tiny_resnet.output.npy"))
    # The model as a finished compile job, as a digest, and as a .kiln file: the same outputs.
    for model in (compiled, compiled.artifact_digest, path):
        outputs = client.submit_inference_job(model, {"input": x}, device="cpu").wait()
        assert list(outputs) == ["output"]
        got = outputs["output"]
        assert isinstance(got, np.ndarray) and got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)

    # An input from any DLPack producer (here one that only speaks DLPack).
    class Producer:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    outputs = client.submit_inference_job(path, {"input": Producer(x)}, device="cpu").wait()
    np.testing.assert_allclose(outputs["output"], want, rtol=1e-4, atol=1e-4)

    timings = client.submit_profile_job(compiled, device="cpu", repeat=5, per_kernel=True).wait()
    kernels = timings["kernels"]
    assert kernels and all(len(k["seconds"]) == 5 for k in kernels)
    assert kernels[0]["median_seconds"] >= kernels[-1]["median_seconds"]  # slowest first
    assert any("relax.matmul" in k["fused_ops"] and k["flops"] > 0 for k in kernels)
    assert 0 < timings["kernel_coverage"] <= 1
    assert timings["function"] == "main" and timings["device"] == "cpu"
    assert len(timings["seconds_per_call"]) == 5
    assert 0 < timings["min_seconds"] <= timings["median_seconds"] <= timings["max_seconds"]


def test_models_as_onnx_bytes_and_as_tvmscript_text(client):
    with open(MLP, "rb") as f:
        onnx_job = client.submit_compile_job(f.read()).wait()
    assert onnx_job.status == "succeeded"
    with open("compiler/script/testdata/tvm_mlp.py") as f:
        script = f.read()
    script_job = client.submit_compile_job(script).wait()
    assert script_job.status == "succeeded"
    assert script_job.artifact_digest != onnx_job.artifact_digest
    # Submitting the same text again is a cache hit: the same artifact.
    again = client.submit_compile_job(script).wait()
    assert again.artifact_digest == script_job.artifact_digest
    assert again.proto.cache_hit


def test_a_pytorch_module_is_exported_on_the_client_and_matches_pytorch(client):
    import torch  # Debian's python3-torch, installed by tools/setup.sh
    torch.manual_seed(0)
    module = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(8 * 4 * 4, 10))
    x = torch.randn(1, 3, 8, 8)
    compiled = client.submit_compile_job(module, example_inputs=x).wait()
    assert compiled.proto.module_name == "Sequential.onnx"
    outputs = client.submit_inference_job(compiled, {"input": x.numpy()}, device="cpu").wait()
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(outputs["output"], want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        client.submit_compile_job(module)  # no example inputs


def test_a_tune_job_reports_its_table(client):
    table = client.submit_tune_job(MLP, device="cpu", trials=8).wait()
    assert table["trials"] == 8 and table["budget"] == 8
    assert len(table["tasks"]) == 2
    assert all(t["default_seconds"] > 0 for t in table["tasks"])
    assert table["curve"][0]["trials"] == 0 and table["curve"][-1]["trials"] == 8


def test_a_quantize_job_reports_its_accuracy_and_its_int8_model_runs(client, tmp_path):
    rng = np.random.default_rng(3)
    calibration = [rng.standard_normal((1, 3, 32, 32), np.float32) for _ in range(6)]
    held_out = [{"input": rng.standard_normal((1, 3, 32, 32), np.float32)} for _ in range(4)]
    job = client.submit_quantize_job(CNN, calibration, eval=held_out)
    report = job.wait()
    assert job.kind == "quantize"
    assert report["calibration_inputs"] == 6 and report["eval_inputs"] == 4
    assert report["held_out"] and report["method"] == "minmax"
    assert report["outputs"][0]["sqnr_db"] > 25 and report["outputs"][0]["top1_total"] == 4
    assert len(report["layers"]) > 3
    path = job.download_quantized_model(tmp_path / "int8.onnx")
    assert os.path.getsize(path) == report["model_size"]
    # The int8 artifact runs on the agent and stays close to the float model.
    x = np.load(os.path.join(MODELS, "tiny_resnet.input.npy"))
    want = np.load(os.path.join(MODELS, "tiny_resnet.output.npy"))
    got = client.submit_inference_job(report["artifact_digest"], {"input": x}, "cpu").wait()
    got = got["output"]
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((want - got) ** 2))
    assert sqnr > 20, sqnr
    # A sample of the wrong shape fails the job, naming the sample and the input.
    bad = calibration[:1] + [np.zeros((1, 3, 16, 16), np.float32)]
    with pytest.raises(kiln.JobFailed) as failed:
        client.submit_quantize_job(CNN, bad).wait()
    assert "sample 1" in failed.value.reason and "input 'input'" in failed.value.reason
    with pytest.raises(kiln.KilnError) as refused:
        client.submit_quantize_job(CNN, [])
    assert refused.value.code == "INVALID_ARGUMENT"


def test_compiling_for_a_device_takes_its_registered_target(client):
    compiled = client.submit_compile_job(MLP, device="cpu").wait()
    assert compiled.proto.target == "llvm"  # the agent runs on kilnd's own architecture
    x = np.zeros((1, 784), np.float32)
    assert client.submit_inference_job(compiled, {"input": x}, "cpu").wait()["output"].shape == (1, 10)
    # By attributes: the same device, the same target.
    chosen = client.submit_compile_job(MLP, device=f"arch={os.uname().machine},min_cores=1").wait()
    assert chosen.proto.device_key == "cpu" and chosen.proto.target == "llvm"
    with pytest.raises(kiln.KilnError) as unknown:
        client.submit_compile_job(MLP, device="no-such-board")
    assert unknown.value.code == "NOT_FOUND" and "cpu" in unknown.value.details
    with pytest.raises(kiln.KilnError) as none_matches:
        client.submit_compile_job(MLP, device="arch=riscv64")
    assert none_matches.value.code == "NOT_FOUND"
    assert "no device matches 'arch=riscv64'" in none_matches.value.details
    # A target named with the device wins; the job still records the device.
    explicit = client.submit_compile_job(MLP, target="llvm -mtriple=aarch64-linux-gnu",
                                         device="cpu").wait()
    assert explicit.proto.target == "llvm -mtriple=aarch64-linux-gnu"
    assert explicit.proto.device_key == "cpu"


def test_listing_jobs_and_devices(client):
    client.submit_compile_job(MLP).wait()
    compiles = client.jobs(kind="compile", state="succeeded")
    assert compiles and all(j.kind == "compile" for j in compiles)
    # A listed inference names its outputs; its result fetches their data.
    inferences = client.jobs(kind="inference", state="succeeded")
    assert inferences  # the first test ran three
    for job in inferences:
        assert all(isinstance(v, np.ndarray) and v.size for v in job.result().values())
    devices = {d["key"]: d for d in client.devices()}
    assert devices["cpu"]["agents_connected"] == 1
    assert devices["cpu"]["target_triple"].startswith(os.uname().machine)
    assert devices["cpu"]["emulated"] is False
    assert client.server_info()["compiler_version"]


def test_outputs_larger_than_a_message_are_streamed(client):
    # (b, 1, 16) + (8, 1) -> relu(./2) of shape (b, 8, 16): b = 16384 makes 8 MiB of output, more
    # than a job message carries and than gRPC's default 4 MiB a Python channel receives.
    model = "compiler/script/testdata/relax_broadcast.py"
    rng = np.random.default_rng(7)
    x = rng.standard_normal((16384, 1, 16), dtype=np.float32)
    bias = rng.standard_normal((8, 1), dtype=np.float32)
    job = client.submit_inference_job(client.submit_compile_job(model).wait(),
                                      {"x": x, "bias": bias}, device="cpu")
    outputs = job.wait()
    assert job.proto.inference.data_elsewhere
    assert not job.proto.inference.outputs[0].data  # named, not carried
    got = next(iter(outputs.values()))
    assert got.shape == (16384, 8, 16)
    np.testing.assert_allclose(got, np.maximum((x + bias) / 2, 0), rtol=1e-6)


def test_errors_carry_the_grpc_code_and_the_reason(client):
    compiled = client.submit_compile_job(MLP).wait()
    with pytest.raises(kiln.KilnError) as refused:
        client.submit_profile_job(compiled, device="no-such-board")
    assert refused.value.code == "NOT_FOUND"
    assert "unknown device key 'no-such-board'" in refused.value.details
    with pytest.raises(kiln.KilnError) as bad_input:
        client.submit_inference_job(compiled, {"input": np.zeros((3, 3), np.float32)}, "cpu")
    assert bad_input.value.code == "INVALID_ARGUMENT"
    # A module that does not load: the job fails with the loader's reason.
    with pytest.raises(kiln.JobFailed) as failed:
        client.submit_compile_job(b"not an onnx model").wait()
    assert failed.value.state == "failed" and "not an ONNX model" in failed.value.reason
    with pytest.raises(ValueError):
        client.submit_compile_job("neither a file nor TVMScript")
    # A cancelled job raises on wait().
    job = client.submit_tune_job(CNN, device="cpu", trials=400)
    job.cancel("enough")
    with pytest.raises(kiln.JobFailed) as cancelled:
        job.wait(timeout=30)
    assert cancelled.value.state == "cancelled" and "enough" in cancelled.value.reason
