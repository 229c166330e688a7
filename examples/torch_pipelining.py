"""The timer inside PyTorch's pipelining runtime (torch.distributed.pipelining).

The runtime's schedules (ScheduleGPipe, Schedule1F1B, ScheduleInterleaved1F1B,
...) call a stage's forward and backward through `_PipelineStageBase`'s
`forward_one_chunk(fwd_chunk_id, args, kwargs)` and
`backward_one_chunk(bwd_chunk_id, ...)`. Wrapping those two methods times
every job the schedule runs, on the stream PyTorch launches it on, without
touching the schedule: the send/recv operations the schedule batches around
them stay outside the jobs, so waiting for a neighbour shows as a bubble.

    stage = PipelineStage(module, stage_index, num_stages, device)
    timer = time_pipeline_stage(stage, f"logs/workerlog.{rank}.ivl", rank=rank)
    schedule = Schedule1F1B(stage, n_microbatches=8, loss_fn=loss_fn)
    for step in range(steps):
        schedule.step(x) if stage.is_first else schedule.step()
        with timer.job("optimizer", 0):
            optimizer.step()
        timer.flush()                         # step boundary

(torch.distributed.pipelining arrived in PyTorch 2.4; Debian 12's PyTorch
1.13 does not have it, which is why the tests drive a hand-written schedule.)
"""
import functools

import pipescope_timer


def _stream():
    import torch

    if torch.cuda.is_available():
        return torch.cuda.current_stream().cuda_stream  # the launching stream's handle
    return None


def time_pipeline_stage(stage, path, rank, first_step=0, backend="auto"):
    """Wraps stage.forward_one_chunk / stage.backward_one_chunk; returns the timer."""
    timer = pipescope_timer.JobTimer(path, rank=rank, first_step=first_step, backend=backend)

    def wrap(method, kind):
        @functools.wraps(method)
        def timed(chunk_id, *args, **kwargs):
            with timer.job(kind, chunk_id, stream=_stream()):
                return method(chunk_id, *args, **kwargs)

        return timed

    stage.forward_one_chunk = wrap(stage.forward_one_chunk, "forward")
    stage.backward_one_chunk = wrap(stage.backward_one_chunk, "backward")
    return timer
