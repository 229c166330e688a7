"""The timer beside Paddle's dygraph pipeline profiler (`_record_stamp`).

Paddle's dygraph pipeline (paddle/distributed/fleet/meta_parallel/
pipeline_parallel.py, `PipelineParallel`) can profile its schedule:
with `profiling` on, `_record_stamp(name, step, phase, color)` is called
around every `_forward_step` and `_backward_step` of `forward_backward_pipeline`,
and each stamp first calls `paddle.device.synchronize()` — it stalls the
pipeline it measures, at every job. The timer records CUDA events on the
stream instead, so the calls go right beside the stamps and the
synchronize can go:

    # in PipelineParallel.__init__ (or right after the model is wrapped):
    self._ps_timer = pipescope_timer.JobTimer(
        f"{log_dir}/workerlog.{self.global_rank}.ivl", rank=self.global_rank,
        first_step=self.total_loss_step if hasattr(self, "total_loss_step") else 0)

    # in forward_backward_pipeline, where the stamps are:
    #   self._record_stamp("F", step_id, '"B"', self._forward_color)   <- was
    self._ps_timer.begin("forward", micro_step, stream=_stream())
    output_tensor = self._forward_step(input_tensor, micro_dataset)
    self._ps_timer.end(stream=_stream())
    #   self._record_stamp("F", step_id, '"E"', self._forward_color)   <- was

    # ... the same around self._backward_step(...) with "backward";
    # after the optimizer step (train_batch), at the step boundary:
    self._ps_timer.flush()

(Names as in Paddle 2.5's pipeline_parallel.py; check them against the
installed version.) `time_paddle_pipeline` below does this without editing Paddle: it wraps the
two step methods of a PipelineParallel instance and its train_batch, and turns
the synchronizing stamps off.
"""
import functools

import pipescope_timer


def _stream():
    import paddle

    if paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0:
        # The raw cudaStream_t of the stream Paddle launches on.
        return paddle.device.current_stream().cuda_stream
    return None


def time_paddle_pipeline(pipeline, path, rank, first_step=0):
    """Times every forward/backward job and flushes after each train_batch."""
    timer = pipescope_timer.JobTimer(path, rank=rank, first_step=first_step)
    pipeline._profiling = False  # no _record_stamp, no synchronize per job
    micro = {"forward": 0, "backward": 0}

    def wrap(method, kind):
        @functools.wraps(method)
        def timed(*args, **kwargs):
            stream = _stream()
            timer.begin(kind, micro[kind], stream=stream)
            try:
                return method(*args, **kwargs)
            finally:
                timer.end(stream=stream)
                micro[kind] += 1

        return timed

    pipeline._forward_step = wrap(pipeline._forward_step, "forward")
    pipeline._backward_step = wrap(pipeline._backward_step, "backward")
    train_batch = pipeline.train_batch

    @functools.wraps(train_batch)
    def train_batch_timed(*args, **kwargs):
        result = train_batch(*args, **kwargs)  # includes the optimizer step
        timer.flush()  # step boundary: resolves this step's events, one block
        micro["forward"] = micro["backward"] = 0
        return result

    pipeline.train_batch = train_batch_timed
    return timer
