#!/usr/bin/env python3
"""The CUDA backend through the Python module, on a real GPU.

    PYTHONPATH=build/python python3 tests/gpu/python_cuda_test.py

Streams are created through the CUDA driver (ctypes on libcuda.so.1, as the
module's library does), and a host function enqueued on the stream between
begin and end holds it for a span timed on the host (time.time_ns() inside
the function); every recorded interval must contain that span up to the
anchor's uncertainty and the event timer's resolution (as
tests/timer/cuda_timer_test.cc does from C++). Exits 77 (skipped) where there
is no driver or no GPU, saying why.
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import time

import pipescope_timer

available, why = pipescope_timer.cuda_available()
if not available:
    print(f"SKIP: no usable GPU: {why}")
    sys.exit(77)

cuda = ctypes.CDLL("libcuda.so.1")
HOST_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what}: CUresult {result}")


def main():
    check(cuda.cuInit(0), "cuInit")
    device = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(device), 0), "cuDeviceGet")
    context = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(context), "cuCtxSetCurrent")
    streams = []
    for _ in range(2):
        stream = ctypes.c_void_p()
        check(cuda.cuStreamCreate(ctypes.byref(stream), 0), "cuStreamCreate")
        streams.append(stream.value)

    spans = []

    def sleep_on_stream(index):
        span = spans[index]
        span[1] = time.time_ns()
        time.sleep(span[0] / 1e9)
        span[2] = time.time_ns()

    callback = HOST_FN(sleep_on_stream)  # kept alive until the streams are done
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "gpu.ivl")
    timer = pipescope_timer.JobTimer(path, backend="cuda")
    assert timer.backend == "cuda", timer.backend_note
    uncertainty = []
    for step in range(3):
        uncertainty.append(timer.anchor_uncertainty_ns)
        for job in range(4):
            stream = streams[job % 2]
            spans.append([(1 + job) * 1_000_000, 0, 0])
            with timer.job("forward", job, stream=stream):
                check(cuda.cuLaunchHostFunc(ctypes.c_void_p(stream), callback,
                                            ctypes.c_void_p(len(spans) - 1)), "cuLaunchHostFunc")
        timer.flush()
    timer.close()
    for stream in streams:
        check(cuda.cuStreamSynchronize(ctypes.c_void_p(stream)), "cuStreamSynchronize")

    reader = os.environ.get("IVL_DUMP")
    if not reader:
        print("IVL_DUMP not set: records written, not checked")
        return 0
    lines = subprocess.run([reader, path], check=True, capture_output=True, text=True).stdout.split("\n")
    records = [tuple(int(x) if x.lstrip("-").isdigit() else x for x in l.split()) for l in lines if l]
    assert len(records) == len(spans), (len(records), len(spans))
    worst = 0
    for i, ((step, kind, mb, stream, start, end), (_, host_start, host_end)) in enumerate(zip(records, spans)):
        slack = uncertainty[i // 4] + 2_000
        assert start <= host_start + slack, (i, start, host_start)
        assert end >= host_end - slack, (i, end, host_end)
        assert stream == i % 2, (i, stream)
        worst = max(worst, host_end - end)
    print(f"{len(records)} jobs bracket their host-timed spans; anchor uncertainty "
          f"{uncertainty[0]} ns; worst recorded end before the host's: {worst} ns")
    return 0


if __name__ == "__main__":
    sys.exit(main())
