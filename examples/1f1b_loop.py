"""Where the timer's calls go in a hand-written 1F1B pipeline loop.

One process per pipeline stage. The five lines marked `# pipescope` are all a
training loop needs; `pipescope analyze logs/` then reports each stage's busy
and idle time, the step windows and the pipeline bubbles. A runnable version
of this loop (PyTorch on CPU, gloo send/recv) is tests/python/torch_1f1b_test.py.

    PYTHONPATH=build/python python3 examples/1f1b_loop.py   # a dry run, no framework
"""
import os
import time

import pipescope_timer  # pipescope


def one_f_one_b(stage, stages, micro_batches):
    """The 1F1B order of one stage: ("forward"|"backward", micro_batch)."""
    warmup = min(stages - stage - 1, micro_batches)
    order = [("forward", mb) for mb in range(warmup)]
    for mb in range(warmup, micro_batches):
        order += [("forward", mb), ("backward", mb - warmup)]
    order += [("backward", mb) for mb in range(micro_batches - warmup, micro_batches)]
    return order


def train(stage, stages, steps, micro_batches, forward, backward, optimizer_step, stream=None):
    os.makedirs("logs", exist_ok=True)
    timer = pipescope_timer.JobTimer(f"logs/workerlog.{stage}.ivl", rank=stage)  # pipescope
    for step in range(steps):
        for kind, mb in one_f_one_b(stage, stages, micro_batches):
            # Receives stay outside the job: waiting for a neighbour is the
            # bubble the analysis should show, not busy time.
            with timer.job(kind, mb, stream=stream):  # pipescope
                (forward if kind == "forward" else backward)(mb)
            # Sends go here, after the job.
        with timer.job("optimizer", 0, stream=stream):  # pipescope
            optimizer_step()
        timer.flush()  # pipescope: one block per step, nothing waits on the device in between
    timer.close()  # also done at interpreter exit


if __name__ == "__main__":
    work = lambda mb: time.sleep(0.001)  # noqa: E731  stand-ins for the stage's compute
    train(stage=0, stages=4, steps=3, micro_batches=8, forward=work, backward=work,
          optimizer_step=lambda: time.sleep(0.0005))
    print("wrote logs/workerlog.0.ivl; try: pipescope analyze logs/")
