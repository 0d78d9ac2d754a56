"""Kiln's Python client: submit compile, profile, inference and tune jobs to a kilnd over gRPC.

    import kiln, numpy as np
    c = kiln.Client("127.0.0.1:7077")
    compiled = c.submit_compile_job("model.onnx").wait()        # a finished compile Job
    outputs = c.submit_inference_job(compiled, {"input": x}, device="cpu").wait()
    timings = c.submit_profile_job(compiled, device="cpu").wait()

Errors are KilnError (a refused request: the gRPC code and the server's reason) or JobFailed (a
job that ended failed or cancelled: its state and reason).
"""
from kiln.client import Client, Job, JobFailed, KilnError, content_digest

__all__ = ["Client", "Job", "JobFailed", "KilnError", "content_digest"]
