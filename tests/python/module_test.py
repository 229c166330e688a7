#!/usr/bin/env python3
"""The Python module pipescope_timer (ctypes over libpipescope_timer.so).

    module_test.py READER FAKE_CUDA_DRIVER

READER: a program that prints an .ivl file's records as lines "step type
micro_batch stream start_ns end_ns" (tests/python/ivl_dump.cc), so the
records are checked without relying on the module itself. FAKE_CUDA_DRIVER:
the stand-in driver (tests/timer/fake_cuda_driver.cc) for the CUDA path.
"""
import errno
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import warnings

import pipescope_timer

READER = FAKE_DRIVER = None


def records(path):
    out = subprocess.run([READER, path], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        step, kind, mb, stream, start, end = line.split()
        rows.append((int(step), kind, int(mb), int(stream), int(start), int(end)))
    return rows


class ModuleTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "workerlog.0.ivl")
        os.environ.pop("PIPESCOPE_CUDA_DRIVER", None)

    def tearDown(self):
        self.dir.cleanup()
        os.environ.pop("PIPESCOPE_CUDA_DRIVER", None)

    def test_jobs_streams_and_steps_are_recorded_within_the_wall_clock(self):
        timer = pipescope_timer.JobTimer(self.path, rank=0, first_step=3, backend="host")
        self.assertEqual(timer.backend, "host")
        brackets = []
        for step in range(2):
            for mb in range(2):
                before = time.time_ns()
                with timer.job("forward", mb):
                    time.sleep(0.002)
                brackets.append((before, time.time_ns()))
            timer.begin("send_forward", 1, stream=7)  # another stream, begin/end style
            timer.end(stream=7)
            brackets.append(None)
            timer.flush()
        self.assertEqual(timer.step, 5)
        self.assertEqual(timer.jobs_recorded, 6)
        self.assertEqual(timer.streams, 2)
        timer.close()
        rows = records(self.path)
        self.assertEqual([r[:4] for r in rows],
                         [(3, "forward", 0, 0), (3, "forward", 1, 0), (3, "send_forward", 1, 1),
                          (4, "forward", 0, 0), (4, "forward", 1, 0), (4, "send_forward", 1, 1)])
        for row, bracket in zip(rows, brackets):
            if bracket:
                self.assertGreaterEqual(row[4], bracket[0] - 100_000)
                self.assertLessEqual(row[5], bracket[1] + 100_000)
                self.assertGreaterEqual(row[5] - row[4], 2_000_000)

    def test_misuse_raises_or_counts(self):
        timer = pipescope_timer.JobTimer(self.path, backend="host")
        timer.end()  # without a begin: counted
        self.assertEqual(timer.unmatched_ends, 1)
        with self.assertRaises(pipescope_timer.TimerError) as caught:
            timer.begin("", 0)
        self.assertEqual(caught.exception.status, pipescope_timer.TimerError.INVALID_ARGUMENT)
        self.assertEqual(str(caught.exception), "a job type name must not be empty")
        with self.assertRaises(TypeError):
            timer.begin("forward", 0, stream="not a stream")
        timer.close()
        timer.close()  # again: fine
        with self.assertRaises(pipescope_timer.TimerError) as caught:
            timer.begin("forward", 0)
        self.assertEqual(caught.exception.status, pipescope_timer.TimerError.CLOSED)
        self.assertEqual(str(caught.exception), f"the timer of {self.path} is closed")
        with self.assertRaises(pipescope_timer.TimerError):
            timer.flush()
        with self.assertRaises(pipescope_timer.TimerError) as caught:
            pipescope_timer.JobTimer(self.path, backend="gpu")
        self.assertEqual(str(caught.exception), "unknown backend 'gpu' (auto, host or cuda)")

    def test_path_that_cannot_be_created_raises_oserror_with_path_and_errno(self):
        path = os.path.join(self.dir.name, "missing", "workerlog.0.ivl")
        with self.assertRaises(OSError) as caught:
            pipescope_timer.JobTimer(path)
        self.assertEqual(caught.exception.errno, errno.ENOENT)
        self.assertEqual(caught.exception.strerror,
                         f"cannot create {path}: No such file or directory")

    def test_auto_without_a_driver_falls_back_to_the_host_clock_and_says_so(self):
        os.environ["PIPESCOPE_CUDA_DRIVER"] = "/nonexistent/libcuda.so.1"
        available, why = pipescope_timer.cuda_available()
        self.assertFalse(available)
        self.assertIn("cannot load the CUDA driver (/nonexistent/libcuda.so.1", why)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            timer = pipescope_timer.JobTimer(self.path)
        self.assertEqual(timer.backend, "host")
        self.assertEqual(len(caught), 1)
        self.assertIn("no usable CUDA driver", str(caught[0].message))
        self.assertIn("using the host clock", timer.backend_note)
        with self.assertRaises(pipescope_timer.TimerError) as raised:
            pipescope_timer.JobTimer(self.path, backend="cuda")
        self.assertEqual(raised.exception.status, pipescope_timer.TimerError.CUDA_ERROR)
        timer.close()

    def test_cuda_backend_takes_integer_stream_handles(self):
        os.environ["PIPESCOPE_CUDA_DRIVER"] = FAKE_DRIVER
        timer = pipescope_timer.JobTimer(self.path, backend="auto")
        self.assertEqual(timer.backend, "cuda")

        class Stream:  # what torch.cuda.Stream looks like to the module
            cuda_stream = 0

        with timer.job("forward", 0, stream=None):
            pass
        with timer.job("forward", 1, stream=Stream()):
            pass
        timer.close()
        self.assertEqual([r[:4] for r in records(self.path)],
                         [(0, "forward", 0, 0), (0, "forward", 1, 0)])

    def test_forked_child_is_refused_and_never_writes(self):
        timer = pipescope_timer.JobTimer(self.path, backend="host")
        with timer.job("forward", 0):
            pass
        timer.flush()
        with timer.job("forward", 1):  # buffered in the parent at the fork
            pass
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                timer.begin("forward", 2)
                message = "begin did not raise"
            except pipescope_timer.TimerError as e:
                message = f"{e.status} {e}"
            os.write(write, message.encode())
            os._exit(0)  # __del__ and atexit never run here; the next test covers them
        os.close(write)
        message = os.read(read, 4096).decode()
        os.waitpid(pid, 0)
        self.assertTrue(message.startswith(f"{pipescope_timer.TimerError.FORKED} the timer of "),
                        message)
        self.assertIn("this is a child of fork()", message)
        with timer.job("forward", 3):
            pass
        timer.close()
        self.assertEqual([r[2] for r in records(self.path)], [0, 1, 3])

    def test_interpreter_exit_closes_and_a_forked_child_exiting_normally_writes_nothing(self):
        script = textwrap.dedent(f"""
            import os, pipescope_timer
            timer = pipescope_timer.JobTimer({self.path!r}, backend="host")
            with timer.job("forward", 0):
                pass
            timer.flush()
            with timer.job("forward", 1):
                pass
            if os.fork() == 0:
                with open({self.path!r} + ".child", "w") as f:
                    f.write("ran")
                raise SystemExit(0)  # a normal exit: atexit and __del__ run in the child
            os.wait()
            # the parent exits without close(): atexit closes the timer
        """)
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stderr, "")
        self.assertTrue(os.path.exists(self.path + ".child"))
        self.assertEqual([r[2] for r in records(self.path)], [0, 1])


if __name__ == "__main__":
    READER, FAKE_DRIVER = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
