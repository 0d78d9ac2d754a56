"""The client: a gRPC channel to kilnd and the jobs submitted through it.

The wire code is generated from proto/ at build time (protoc with grpc_python_plugin) into
_generated/; nothing here encodes a message by hand.
"""
from __future__ import annotations

import hashlib
import os
import struct
import sys
import uuid
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Union

import grpc
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_generated"))
from proto.kiln.v1 import jobs_pb2, service_pb2, service_pb2_grpc  # noqa: E402
from runtime.format import artifact_pb2  # noqa: E402

# A model: a path (.onnx, .py TVMScript, .pb IR), ONNX bytes, TVMScript text, or a
# torch.nn.Module (with example inputs: exported to ONNX here, on the client).
Model = Union[str, os.PathLike, bytes, Any]
# What an inference or profile job runs: a finished compile Job, an artifact digest (64 hex
# digits) or a .kiln file.
Artifact = Union["Job", str, os.PathLike]


class KilnError(Exception):
    """kilnd refused a request: `code` is the gRPC status code's name, `details` kilnd's reason."""

    def __init__(self, code: str, details: str):
        super().__init__(f"{code}: {details}")
        self.code = code
        self.details = details


class JobFailed(KilnError):
    """A job ended failed or cancelled; `job` is the job as it ended."""

    def __init__(self, job: "Job", state: str, reason: str):
        super().__init__(state.upper(), f"job {job.id} {state}: {reason}")
        self.job = job
        self.state = state
        self.reason = reason


def _call(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except grpc.RpcError as e:  # every RPC error carries a code and kilnd's reason
        raise KilnError(e.code().name, e.details() or "") from None


def _state_name(state: int) -> str:
    return jobs_pb2.JobState.Name(state).rsplit("_", 1)[-1].lower()


def _torch_to_onnx(module: Any, example_inputs: Any) -> bytes:
    import io

    import torch  # only for a torch.nn.Module, which brings it

    if example_inputs is None:
        raise ValueError("a torch.nn.Module needs example_inputs (a tensor or a tuple of them)")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    names = [f"input{i}" if len(example_inputs) > 1 else "input"
             for i in range(len(example_inputs))]
    buffer = io.BytesIO()
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, example_inputs, buffer, input_names=names,
                          output_names=["output"], opset_version=13)
    return buffer.getvalue()


def _device_fields(device: Optional[str]) -> Dict[str, str]:
    """A device named by key ("board") or by attributes ("arch=aarch64,min_cores=4")."""
    if not device:
        return {}
    if "=" in device or "~" in device:
        return {"device_selector": device}
    return {"device_key": device}


def _module_source(model: Model, example_inputs: Any = None) -> jobs_pb2.ModuleSource:
    source = jobs_pb2.ModuleSource()
    if type(model).__module__.startswith("torch") or hasattr(model, "_modules"):
        source.onnx = _torch_to_onnx(model, example_inputs)
        source.name = f"{type(model).__name__}.onnx"
    elif isinstance(model, bytes):
        source.onnx = model
        source.name = "model.onnx"
    elif isinstance(model, (os.PathLike, str)) and os.path.isfile(model):
        path = os.fspath(model)
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".onnx"):
            source.onnx = data
        elif path.endswith(".pb"):
            source.ir_proto = data
        elif path.endswith(".py"):
            source.tvmscript = data  # UTF-8 text: kilnd says where it is not
        else:
            raise ValueError(f"{path}: a model is .onnx, .py (TVMScript) or .pb (Kiln IR)")
        source.name = os.path.basename(path)
    elif isinstance(model, str) and "ir_module" in model:
        source.tvmscript = model.encode("utf-8")  # TVM's mod.script() output, as it is
        source.name = "module.py"
    else:
        raise ValueError(f"not a model file, ONNX bytes or TVMScript text: {str(model)[:80]!r}")
    return source


def _to_tensor_value(name: str, array: Any) -> jobs_pb2.TensorValue:
    if hasattr(array, "__dlpack__") and not isinstance(array, np.ndarray):
        array = np.from_dlpack(array)  # a DLPack producer (PyTorch, JAX, CuPy on the CPU)
    a = np.ascontiguousarray(array)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return jobs_pb2.TensorValue(name=name, dtype=str(a.dtype), shape=list(a.shape),
                                data=a.tobytes())


# One input of a quantize job: an array (a model of one input) or {input name: array}.
Sample = Union[Any, Mapping[str, Any]]


def _quantize_sample(index: int, sample: Sample) -> jobs_pb2.QuantizeSample:
    out = jobs_pb2.QuantizeSample(name=f"sample{index}")
    if isinstance(sample, Mapping):
        out.inputs.extend(_to_tensor_value(name, a) for name, a in sample.items())
    else:
        out.inputs.append(_to_tensor_value("", sample))
    return out


def _db(value: float) -> float:
    return float("inf") if value == float("inf") else round(value, 2)


def _from_tensor_value(t: jobs_pb2.TensorValue) -> np.ndarray:
    dtype = np.dtype(t.dtype).newbyteorder("<")
    return np.frombuffer(t.data, dtype=dtype).reshape(tuple(t.shape)).copy()


class Job:
    """A job on kilnd. `wait()` gives its result: for a compile, the finished Job; for an
    inference, {output name: numpy array}; for a profile, its timings; for a tune, its table;
    for a quantize, its accuracy report (download_quantized_model() writes the model)."""

    def __init__(self, client: "Client", job: jobs_pb2.Job):
        self._client = client
        self._job = job

    @property
    def id(self) -> str:
        return self._job.id

    @property
    def kind(self) -> str:
        return jobs_pb2.JobKind.Name(self._job.kind).rsplit("_", 1)[-1].lower()

    @property
    def status(self) -> str:
        """The job's state now: queued, running, succeeded, failed or cancelled."""
        self.refresh()
        return _state_name(self._job.state)

    @property
    def artifact_digest(self) -> str:
        return self._job.artifact_digest

    @property
    def proto(self) -> jobs_pb2.Job:
        """The job as last seen, as kilnd describes it."""
        return self._job

    def refresh(self) -> "Job":
        self._job = _call(self._client._stub.GetJob, service_pb2.GetJobRequest(job_id=self.id),
                          metadata=self._client._metadata)
        return self

    def events(self, timeout: Optional[float] = None) -> Iterator[Dict[str, Any]]:
        """Every event of the job from now on, starting with its state; ends when it is done."""
        stream = self._client._stub.WatchJob(service_pb2.WatchJobRequest(job_id=self.id),
                                             metadata=self._client._metadata, timeout=timeout)
        try:
            for event in stream:
                self._job = event.job
                yield {"state": _state_name(event.state), "message": event.message,
                       "unix_ms": event.unix_ms}
        except grpc.RpcError as e:
            raise KilnError(e.code().name, e.details() or "") from None

    def wait(self, timeout: Optional[float] = None) -> Any:
        """Waits for the job to end (KilnError DEADLINE_EXCEEDED after `timeout` seconds) and
        returns its result; JobFailed when it failed or was cancelled."""
        for _ in self.events(timeout=timeout):
            pass
        state = _state_name(self._job.state)
        if state != "succeeded":
            raise JobFailed(self, state, self._job.reason)
        return self.result()

    def result(self) -> Any:
        j = self._job
        if j.kind == jobs_pb2.JOB_KIND_INFERENCE:
            # Over 1 MiB in all (or listed): the job names its outputs, the data is streamed.
            outputs = (self._client._download_outputs(self.id) if j.inference.data_elsewhere
                       else list(j.inference.outputs))
            return {t.name or f"output{i}": _from_tensor_value(t)
                    for i, t in enumerate(outputs)}
        if j.kind == jobs_pb2.JOB_KIND_PROFILE:
            p = j.profile
            return {"function": p.function, "number": p.number,
                    "seconds_per_call": list(p.seconds_per_call),
                    "median_seconds": p.median_seconds, "mean_seconds": p.mean_seconds,
                    "min_seconds": p.min_seconds, "max_seconds": p.max_seconds,
                    "stddev_seconds": p.stddev_seconds, "device": j.device_key,
                    "agent": j.agent_id, "emulated": p.emulated,
                    "kernels": [{"name": k.name, "fused_ops": list(k.fused_ops),
                                 "calls": k.calls, "median_seconds": k.median_seconds,
                                 "share": k.share, "flops": k.flops,
                                 "gflops_per_second": k.gflops_per_second,
                                 "seconds": list(k.seconds)} for k in p.kernels],
                    "kernel_coverage": p.kernel_coverage}
        if j.kind == jobs_pb2.JOB_KIND_TUNE:
            t = j.tune
            return {"trials": t.trials, "budget": t.budget, "elapsed_s": t.elapsed_s,
                    "budget_s": t.budget_s, "out_of_time": t.out_of_time,
                    "milestones": [{"fraction": m.fraction, "trials": m.trials,
                                    "elapsed_s": m.elapsed_s} for m in t.milestones],
                    "tasks": [{"name": x.name, "workload_key": x.workload_key,
                               "weight": x.weight, "trials": x.trials, "failures": x.failures,
                               "transferred": x.transferred,
                               "default_seconds": x.default_seconds or None,
                               "best_seconds": x.best_seconds or None,
                               "record_applied": x.record_applied, "error": x.error}
                              for x in t.tasks],
                    "curve": [{"trials": p.trials, "estimated_seconds": p.estimated_seconds,
                               "elapsed_s": p.elapsed_s} for p in t.curve]}
        if j.kind == jobs_pb2.JOB_KIND_QUANTIZE:
            q = j.quantize
            return {"method": q.method, "calibration_inputs": q.calibration_inputs,
                    "eval_inputs": q.eval_inputs, "held_out": q.held_out,
                    "folded_batch_norms": q.folded_batch_norms,
                    "quantized_activations": q.quantized_activations,
                    "float_layers": list(q.float_layers), "model_size": q.model_size,
                    "model_sha256": q.model_sha256, "artifact_digest": j.artifact_digest,
                    "outputs": [{"name": o.name, "max_abs_error": o.max_abs_error,
                                 "sqnr_db": _db(o.sqnr_db), "top1_agree": o.top1_agree,
                                 "top1_total": o.top1_total} for o in q.outputs],
                    "layers": [{"name": x.name, "op_type": x.op_type, "tensor": x.tensor,
                                "sqnr_db": _db(x.sqnr_db)} for x in q.layers]}
        return self

    def download_quantized_model(self, path: Union[str, os.PathLike]) -> str:
        """Writes a finished quantize job's QDQ ONNX model to `path` (checked against the SHA-256
        the job names) and returns the path."""
        if not self._job.quantize.model_sha256:
            self.wait()
        outputs = self._client._download_outputs(self.id)
        if len(outputs) != 1 or outputs[0].name != "quantized_model":
            raise KilnError("DATA_LOSS", f"job {self.id} answered no quantized model")
        data = outputs[0].data
        if hashlib.sha256(data).hexdigest() != self._job.quantize.model_sha256:
            raise KilnError("DATA_LOSS", f"job {self.id}: the model does not match its SHA-256")
        with open(path, "wb") as f:
            f.write(data)
        return os.fspath(path)

    def cancel(self, reason: str = "") -> "Job":
        self._job = _call(self._client._stub.CancelJob,
                          service_pb2.CancelJobRequest(job_id=self.id, reason=reason),
                          metadata=self._client._metadata)
        return self

    def download_artifact(self, path: Union[str, os.PathLike]) -> str:
        """Writes the compiled .kiln artifact to `path`; returns the path."""
        if not self._job.artifact_digest:
            self.refresh()
        if not self._job.artifact_digest:
            raise KilnError("FAILED_PRECONDITION", f"job {self.id} has no artifact (yet)")
        data = self._client.download_artifact(self._job.artifact_digest)
        with open(path, "wb") as f:
            f.write(data)
        return os.fspath(path)

    def __repr__(self) -> str:
        return f"Job({self.id!r}, kind={self.kind!r}, state={_state_name(self._job.state)!r})"


def content_digest(artifact: bytes) -> str:
    """The content digest of .kiln bytes, as runtime/artifact.h computes it: SHA-256 over the
    executable, the kernels and the manifest (its digest field empty, serialized
    deterministically), each prefixed by its length; the signature is outside it."""
    a = artifact_pb2.ArtifactProto()
    try:
        a.ParseFromString(artifact)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError has no stable import path
        return ""
    manifest = artifact_pb2.ArtifactManifest()
    manifest.CopyFrom(a.manifest)
    manifest.ClearField("digest")
    h = hashlib.sha256()
    for field in (a.executable, a.kernels, manifest.SerializeToString(deterministic=True)):
        h.update(struct.pack("<Q", len(field)))
        h.update(field)
    return h.hexdigest()


class Client:
    """A connection to kilnd at `address` ("host:port"). `token`: a client token (sent as a
    bearer token); `tls`: the PEM of the CA that signed kilnd's certificate (bytes or a path), or
    True for the system's roots."""

    def __init__(self, address: str, token: Optional[str] = None,
                 tls: Union[None, bool, bytes, str] = None):
        if tls:
            roots = None
            if isinstance(tls, str) and os.path.isfile(tls):
                with open(tls, "rb") as f:
                    roots = f.read()
            elif isinstance(tls, bytes):
                roots = tls
            channel = grpc.secure_channel(address, grpc.ssl_channel_credentials(roots))
        else:
            channel = grpc.insecure_channel(address)
        self._channel = channel
        self._stub = service_pb2_grpc.KilnStub(channel)
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- submitting ----

    def _submit(self, rpc, request) -> Job:
        if not request.idempotency_key:  # retries of this call name the same job
            request.idempotency_key = uuid.uuid4().hex
        response = _call(rpc, request, metadata=self._metadata)
        return Job(self, response.job)

    def submit_compile_job(self, model: Model, target: Optional[str] = None, *,
                           device: Optional[str] = None, example_inputs: Any = None,
                           no_fuse: bool = False, no_tuning: bool = False,
                           deadline_s: float = 0) -> Job:
        """Compiles `model` for `target`, or (target None) for `device`: a key or attributes
        ("arch=aarch64,features~neon"), whose registered triple and CPU features kilnd turns into
        the target ("llvm" when the device is kilnd's own CPU). The service's tuning records are
        applied unless `no_tuning`. A torch.nn.Module is exported to ONNX here with
        `example_inputs`; its inputs are then named "input" (or input0, input1, ...) and its
        output "output"."""
        target = target or ("" if device else "llvm")
        request = jobs_pb2.SubmitCompileRequest(module=_module_source(model, example_inputs),
                                                target=target.encode(),
                                                deadline_ms=int(deadline_s * 1000),
                                                **_device_fields(device))
        request.options.no_fuse = no_fuse
        request.options.no_tuning = no_tuning
        return self._submit(self._stub.SubmitCompile, request)

    def _artifact_ref(self, model: Artifact) -> jobs_pb2.ArtifactRef:
        if isinstance(model, Job):
            if model.kind != "compile":
                raise ValueError(f"job {model.id} is a {model.kind} job, not a compile")
            if not model.artifact_digest:
                model.wait()
            return jobs_pb2.ArtifactRef(digest=model.artifact_digest)
        if isinstance(model, (str, os.PathLike)) and os.path.isfile(model):
            with open(model, "rb") as f:
                return jobs_pb2.ArtifactRef(artifact=f.read())
        if isinstance(model, str) and len(model) == 64:
            return jobs_pb2.ArtifactRef(digest=model)
        raise ValueError(f"not a compile job, an artifact digest or a .kiln file: {model!r}")

    def submit_profile_job(self, model: Artifact, device: str, *, function: str = "main",
                           repeat: int = 10, min_repeat_ms: int = 0, warmup: int = 0,
                           per_kernel: bool = False, deadline_s: float = 0) -> Job:
        """Times `model`'s `function` on an agent of `device` (random inputs of its signature);
        with `per_kernel`, also each kernel: its time, share, FLOP rate and operators."""
        request = jobs_pb2.SubmitProfileRequest(artifact=self._artifact_ref(model),
                                                **_device_fields(device),
                                                deadline_ms=int(deadline_s * 1000))
        o = request.options
        o.function, o.repeat, o.min_repeat_ms, o.warmup = function, repeat, min_repeat_ms, warmup
        o.per_kernel = per_kernel
        return self._submit(self._stub.SubmitProfile, request)

    def submit_inference_job(self, model: Artifact, inputs: Mapping[str, Any], device: str, *,
                             function: str = "main", deadline_s: float = 0) -> Job:
        """Runs `model` on `inputs` ({parameter name: array}) on an agent of `device`."""
        request = jobs_pb2.SubmitInferenceRequest(artifact=self._artifact_ref(model),
                                                  **_device_fields(device), function=function,
                                                  deadline_ms=int(deadline_s * 1000))
        for name, array in inputs.items():
            request.inputs.append(_to_tensor_value(name, array))
        return self._submit(self._stub.SubmitInference, request)

    def submit_tune_job(self, model: Model, device: str, trials: int, *, target: str = "",
                        example_inputs: Any = None, max_trials_per_task: int = 0, seed: int = 1,
                        deadline_s: float = 0, budget_s: float = 0) -> Job:
        """Tunes `model`'s kernels, each candidate measured on an agent of `device`; the records
        go to the service's tuning database, which later compiles apply. The target is the
        device's unless given. With `budget_s` the search returns what it has when that many
        seconds have passed (`trials` 0: as many as the server allows)."""
        request = jobs_pb2.SubmitTuneRequest(module=_module_source(model, example_inputs),
                                             target=target.encode(), **_device_fields(device),
                                             trials=trials,
                                             max_trials_per_task=max_trials_per_task, seed=seed,
                                             budget_s=budget_s,
                                             deadline_ms=int(deadline_s * 1000))
        return self._submit(self._stub.SubmitTune, request)

    def submit_quantize_job(self, model: Model, calibration: Sequence[Sample], *,
                            eval: Optional[Sequence[Sample]] = None, method: str = "minmax",
                            percentile: float = 0, keep_float: Sequence[str] = (),
                            target: str = "", device: Optional[str] = None,
                            example_inputs: Any = None, deadline_s: float = 0) -> Job:
        """int8 post-training quantization of a float ONNX model (or a torch.nn.Module, exported
        here with `example_inputs`): calibrated on `calibration` (arrays, or {input name: array}
        for a model of several inputs) with minmax, percentile or entropy ranges; its accuracy
        against float reported per output and per layer on `eval` (held out; the calibration
        inputs when None); layers named in `keep_float` stay float. The QDQ model is compiled
        for `target` (or `device`'s target, else kilnd's CPU): wait() gives the report,
        download_quantized_model() the model, artifact_digest the compiled artifact."""
        source = _module_source(model, example_inputs)
        if not source.HasField("onnx"):
            raise ValueError("quantize takes an ONNX model (a .onnx file, its bytes or a torch "
                             "module)")
        request = jobs_pb2.SubmitQuantizeRequest(model=source, method=method,
                                                 percentile=percentile,
                                                 keep_float=list(keep_float),
                                                 target=target.encode(),
                                                 deadline_ms=int(deadline_s * 1000),
                                                 **_device_fields(device))
        request.calibration.extend(_quantize_sample(i, x) for i, x in enumerate(calibration))
        request.eval.extend(_quantize_sample(i, x) for i, x in enumerate(eval or []))
        return self._submit(self._stub.SubmitQuantize, request)

    # ---- reading ----

    def job(self, job_id: str) -> Job:
        return Job(self, jobs_pb2.Job(id=job_id)).refresh()

    def jobs(self, kind: Optional[str] = None, state: Optional[str] = None,
             limit: int = 100) -> List[Job]:
        """The newest jobs (yours, or everyone's for an admin), by kind and state if given."""
        request = service_pb2.ListJobsRequest(limit=limit)
        if state:
            request.state = jobs_pb2.JobState.Value(f"JOB_STATE_{state.upper()}")
        response = _call(self._stub.ListJobs, request, metadata=self._metadata)
        out = [Job(self, j) for j in response.jobs]
        return [j for j in out if kind is None or j.kind == kind]

    def devices(self) -> List[Dict[str, Any]]:
        """The device keys agents registered, with their attributes."""
        response = _call(self._stub.ListDevices, service_pb2.ListDevicesRequest(),
                         metadata=self._metadata)
        return [{"key": d.key, "agents_connected": d.agents_connected,
                 "tasks_queued": d.tasks_queued, "last_seen_unix_ms": d.last_seen_unix_ms,
                 "target_triple": d.attributes.target_triple,
                 "cpu_model": d.attributes.cpu_model,
                 "cpu_features": list(d.attributes.cpu_features), "cores": d.attributes.cores,
                 "memory_bytes": d.attributes.memory_bytes, "hostname": d.attributes.hostname,
                 "emulated": d.attributes.emulated}
                for d in response.devices]

    def download_artifact(self, digest: str) -> bytes:
        """The .kiln bytes of an artifact you compiled (or ran)."""
        chunks, total = [], None
        stream = self._stub.DownloadArtifact(service_pb2.DownloadArtifactRequest(digest=digest),
                                             metadata=self._metadata)
        try:
            for chunk in stream:
                if total is None:
                    total = chunk.total_size
                chunks.append(chunk.data)
        except grpc.RpcError as e:
            raise KilnError(e.code().name, e.details() or "") from None
        data = b"".join(chunks)
        if total is not None and len(data) != total:
            raise KilnError("DATA_LOSS", f"artifact {digest}: {len(data)} of {total} bytes came")
        actual = content_digest(data)
        if actual != digest:
            raise KilnError("DATA_LOSS", f"artifact {digest}: what came has digest {actual}")
        return data

    def _download_outputs(self, job_id: str) -> List[jobs_pb2.TensorValue]:
        """A finished inference's outputs, streamed in pieces (DownloadOutputs)."""
        outputs: List[jobs_pb2.TensorValue] = []
        pieces: List[List[bytes]] = []
        sizes: List[int] = []
        got = 0  # bytes of the current output so far
        stream = self._stub.DownloadOutputs(service_pb2.DownloadOutputsRequest(job_id=job_id),
                                            metadata=self._metadata)
        try:
            for chunk in stream:
                if chunk.index == len(outputs) and chunk.offset == 0:
                    outputs.append(jobs_pb2.TensorValue(name=chunk.tensor.name,
                                                        dtype=chunk.tensor.dtype,
                                                        shape=chunk.tensor.shape))
                    pieces.append([])
                    sizes.append(chunk.total_size)
                    got = 0
                elif not outputs or chunk.index != len(outputs) - 1 or chunk.offset != got:
                    raise KilnError("DATA_LOSS", f"job {job_id}: output pieces out of order")
                pieces[-1].append(chunk.tensor.data)
                got += len(chunk.tensor.data)
        except grpc.RpcError as e:
            raise KilnError(e.code().name, e.details() or "") from None
        for i, t in enumerate(outputs):
            t.data = b"".join(pieces[i])
            if len(t.data) != sizes[i]:
                raise KilnError("DATA_LOSS",
                                f"job {job_id}: output {i}: {len(t.data)} of {sizes[i]} bytes came")
        return outputs

    def server_info(self) -> Dict[str, Any]:
        info = _call(self._stub.GetServerInfo, service_pb2.GetServerInfoRequest(),
                     metadata=self._metadata)
        return {"compiler_version": info.compiler_version,
                "host_target_triple": info.host_target_triple,
                "components": {c.name: c.version for c in info.components}}
