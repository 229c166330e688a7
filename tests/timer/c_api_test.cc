// The timer's C ABI (timer/pipescope_timer.h) through libpipescope_timer.so:
// records, counters, every misuse as a status with its text, the backend
// choice with and without a CUDA driver, and fork() refused in the child.
#include <gtest/gtest.h>
#include <pipescope_timer.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "records/ivl_reader.h"
#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

std::string last_error(int* os_errno = nullptr) {
  const char* message = nullptr;
  EXPECT_EQ(pipescope_timer_last_error(&message, os_errno), PIPESCOPE_TIMER_OK);
  return message;
}

struct Read {
  std::vector<ivl::Record> records;
  std::vector<std::string> types;
  ivl::ReadResult result;
};

Read read_all(const std::string& path) {
  Read out;
  ivl::ReadCallbacks cb;
  cb.on_records = [&](const ivl::RecordBlock& block) {
    for (std::uint32_t i = 0; i < block.count; ++i) out.records.push_back(block.record(i));
    out.types = *block.types;
  };
  out.result = ivl::read_file(path, cb);
  return out;
}

pipescope_timer_options host_options(const std::string& path) {
  pipescope_timer_options o;
  EXPECT_EQ(pipescope_timer_options_init(&o), PIPESCOPE_TIMER_OK);
  o.path = path.c_str();
  o.backend = "host";
  return o;
}

pipescope_timer_counters_t counters(const pipescope_timer* t) {
  pipescope_timer_counters_t c{};
  c.struct_size = sizeof c;
  EXPECT_EQ(pipescope_timer_counters(t, &c), PIPESCOPE_TIMER_OK);
  return c;
}

TEST(TimerCApi, RecordsJobsWithCountersAndCloses) {
  TempDir dir;
  const std::string path = dir / "rank2.ivl";
  pipescope_timer_options o = host_options(path);
  o.machine = 1;
  o.rank = 2;
  o.machine_name = "node7";
  o.first_step = 5;
  pipescope_timer* t = nullptr;
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK) << last_error();
  uint32_t fwd = 99;
  uint32_t bwd = 99;
  ASSERT_EQ(pipescope_timer_job_type(t, "forward", &fwd), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_job_type(t, "backward", &bwd), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(fwd, 0u);
  EXPECT_EQ(bwd, 1u);
  int compute = 0;
  int comm = 0;
  for (int step = 0; step < 2; ++step) {
    for (int mb = 0; mb < 3; ++mb) {
      ASSERT_EQ(pipescope_timer_begin(t, fwd, mb, &compute), PIPESCOPE_TIMER_OK);
      ASSERT_EQ(pipescope_timer_end(t, &compute), PIPESCOPE_TIMER_OK);
    }
    ASSERT_EQ(pipescope_timer_begin(t, bwd, 0, &comm), PIPESCOPE_TIMER_OK);
    ASSERT_EQ(pipescope_timer_end(t, &comm), PIPESCOPE_TIMER_OK);
    ASSERT_EQ(pipescope_timer_flush(t), PIPESCOPE_TIMER_OK);
  }
  ASSERT_EQ(pipescope_timer_begin(t, fwd, 0, &compute), PIPESCOPE_TIMER_OK);  // left open
  pipescope_timer_counters_t c = counters(t);
  EXPECT_EQ(c.backend, PIPESCOPE_TIMER_BACKEND_HOST);
  EXPECT_EQ(c.jobs_recorded, 8u);
  EXPECT_EQ(c.open_jobs, 1u);
  EXPECT_EQ(c.step, 7);
  EXPECT_EQ(c.streams, 2u);
  EXPECT_EQ(c.closed, 0);
  EXPECT_GE(c.anchor_uncertainty_ns, 0);
  const char* note = nullptr;
  ASSERT_EQ(pipescope_timer_backend_note(t, &note), PIPESCOPE_TIMER_OK);
  EXPECT_STREQ(note, "");  // asked for explicitly
  ASSERT_EQ(pipescope_timer_close(t), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(counters(t).closed, 1);
  EXPECT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);

  const Read r = read_all(path);
  EXPECT_EQ(r.result.problems, 0u);
  EXPECT_EQ(r.result.header.machine, 1);
  EXPECT_EQ(r.result.header.rank, 2);
  EXPECT_EQ(r.result.header.machine_name, "node7");
  EXPECT_EQ(r.result.header.first_step, 5);
  ASSERT_EQ(r.records.size(), 8u);
  for (std::size_t i = 0; i < r.records.size(); ++i) {
    EXPECT_EQ(r.records[i].step, static_cast<std::int32_t>(5 + i / 4)) << i;
    EXPECT_EQ(r.types[r.records[i].type], i % 4 == 3 ? "backward" : "forward") << i;
    EXPECT_EQ(r.records[i].stream, i % 4 == 3 ? 1u : 0u) << i;
    EXPECT_LE(r.records[i].start_ns, r.records[i].end_ns) << i;
  }
}

TEST(TimerCApi, MisuseIsAStatusWithItsReason) {
  TempDir dir;
  const std::string path = dir / "t.ivl";
  pipescope_timer* t = nullptr;
  EXPECT_EQ(pipescope_timer_open(nullptr, &t), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "options is NULL");
  pipescope_timer_options o = host_options(path);
  o.backend = "gpu";
  EXPECT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "unknown backend 'gpu' (auto, host or cuda)");
  EXPECT_EQ(t, nullptr);
  o = host_options(path);
  o.struct_size = 8;
  EXPECT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("options.struct_size is 8, expected"), std::string::npos);
  const std::string empty;  // outlives `o`, which keeps its c_str()
  o = host_options(empty);
  EXPECT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "options.path is empty");

  o = host_options(path);
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK);
  uint32_t id = 0;
  EXPECT_EQ(pipescope_timer_job_type(t, "", &id), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "a job type name must not be empty");
  EXPECT_EQ(pipescope_timer_begin(t, 3, 0, nullptr), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "job type id 3 was not returned by job_type (0 types)");
  EXPECT_EQ(pipescope_timer_begin(nullptr, 0, 0, nullptr), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "timer is NULL");
  // An end without a begin is counted, not an error.
  EXPECT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(counters(t).unmatched_ends, 2u);
  pipescope_timer_counters_t wrong{};
  wrong.struct_size = 4;
  EXPECT_EQ(pipescope_timer_counters(t, &wrong), PIPESCOPE_TIMER_INVALID_ARGUMENT);
  // A closed timer refuses work; closing again is fine.
  ASSERT_EQ(pipescope_timer_job_type(t, "forward", &id), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_close(t), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(pipescope_timer_close(t), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(pipescope_timer_begin(t, id, 0, nullptr), PIPESCOPE_TIMER_CLOSED);
  EXPECT_EQ(last_error(), "the timer of " + path + " is closed");
  EXPECT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_CLOSED);
  EXPECT_EQ(pipescope_timer_flush(t), PIPESCOPE_TIMER_CLOSED);
  EXPECT_EQ(pipescope_timer_job_type(t, "backward", &id), PIPESCOPE_TIMER_CLOSED);
  EXPECT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(pipescope_timer_free(nullptr), PIPESCOPE_TIMER_OK);
}

TEST(TimerCApi, PathThatCannotBeCreatedGivesThePathAndErrno) {
  TempDir dir;
  const std::string path = dir / "no-such-dir/rank0.ivl";
  pipescope_timer_options o = host_options(path);
  pipescope_timer* t = nullptr;
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_IO_ERROR);
  EXPECT_EQ(t, nullptr);
  int os_errno = 0;
  EXPECT_EQ(last_error(&os_errno), "cannot create " + path + ": No such file or directory");
  EXPECT_EQ(os_errno, ENOENT);
}

TEST(TimerCApi, BackendChoiceWithAndWithoutACudaDriver) {
  TempDir dir;
  const std::string path = dir / "t.ivl";
  pipescope_timer* t = nullptr;
  // No driver: "cuda" fails with the reason, "auto" takes the host clock and says why.
  ::setenv("PIPESCOPE_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  pipescope_timer_options o = host_options(path);
  o.backend = "cuda";
  EXPECT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_CUDA_ERROR);
  EXPECT_NE(last_error().find("cannot load the CUDA driver (/nonexistent/libcuda.so.1"),
            std::string::npos);
  int available = 1;
  const char* why = nullptr;
  ASSERT_EQ(pipescope_timer_cuda_available(&available, &why), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(available, 0);
  EXPECT_NE(std::string(why).find("/nonexistent/libcuda.so.1"), std::string::npos) << why;
  o.backend = nullptr;  // auto
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(counters(t).backend, PIPESCOPE_TIMER_BACKEND_HOST);
  const char* note = nullptr;
  ASSERT_EQ(pipescope_timer_backend_note(t, &note), PIPESCOPE_TIMER_OK);
  EXPECT_NE(std::string(note).find("no usable CUDA driver (cannot load the CUDA driver"),
            std::string::npos)
      << note;
  EXPECT_NE(std::string(note).find("): using the host clock"), std::string::npos) << note;
  EXPECT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);
  // A driver that finds no device: the same, with the driver's own reason.
  ::setenv("PIPESCOPE_CUDA_DRIVER", PIPESCOPE_FAKE_CUDA_DRIVER_NO_DEVICE, 1);
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_backend_note(t, &note), PIPESCOPE_TIMER_OK);
  EXPECT_NE(std::string(note).find("cuInit: CUDA_ERROR_NO_DEVICE"), std::string::npos) << note;
  EXPECT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);
  // A driver with a device: "auto" takes CUDA events.
  ::setenv("PIPESCOPE_CUDA_DRIVER", PIPESCOPE_FAKE_CUDA_DRIVER, 1);
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK) << last_error();
  EXPECT_EQ(counters(t).backend, PIPESCOPE_TIMER_BACKEND_CUDA);
  ASSERT_EQ(pipescope_timer_backend_note(t, &note), PIPESCOPE_TIMER_OK);
  EXPECT_STREQ(note, "CUDA driver found: using CUDA events");
  uint32_t fwd = 0;
  ASSERT_EQ(pipescope_timer_job_type(t, "forward", &fwd), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_begin(t, fwd, 0, nullptr), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);
  EXPECT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);  // closes: flushes the job
  ::unsetenv("PIPESCOPE_CUDA_DRIVER");
  EXPECT_EQ(read_all(path).records.size(), 1u);
}

// The child of fork() shares the parent's file: it must refuse every call and
// never write, not even the parent's buffered jobs when it frees its copy.
TEST(TimerCApi, ForkedChildRefusesAndNeverWritesIntoTheParentsFile) {
  TempDir dir;
  const std::string path = dir / "t.ivl";
  pipescope_timer_options o = host_options(path);
  pipescope_timer* t = nullptr;
  ASSERT_EQ(pipescope_timer_open(&o, &t), PIPESCOPE_TIMER_OK);
  uint32_t fwd = 0;
  ASSERT_EQ(pipescope_timer_job_type(t, "forward", &fwd), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_begin(t, fwd, 0, nullptr), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_flush(t), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_begin(t, fwd, 1, nullptr), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);  // buffered, not flushed
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Exit status: a bit per check that failed (gtest must not run here).
    int failed = 0;
    if (pipescope_timer_begin(t, fwd, 2, nullptr) != PIPESCOPE_TIMER_FORKED) failed |= 1;
    const char* message = nullptr;
    pipescope_timer_last_error(&message, nullptr);
    const std::string text = message;
    if (text.find("this is a child of fork()") == std::string::npos ||
        text.find("must not write into its parent's file") == std::string::npos) {
      failed |= 2;
    }
    if (pipescope_timer_end(t, nullptr) != PIPESCOPE_TIMER_FORKED) failed |= 4;
    if (pipescope_timer_flush(t) != PIPESCOPE_TIMER_FORKED) failed |= 8;
    if (pipescope_timer_close(t) != PIPESCOPE_TIMER_FORKED) failed |= 16;
    if (pipescope_timer_free(t) != PIPESCOPE_TIMER_FORKED) failed |= 32;
    ::_exit(failed);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "bit mask of the child's failed checks";
  // The parent goes on as if nothing happened.
  ASSERT_EQ(pipescope_timer_begin(t, fwd, 3, nullptr), PIPESCOPE_TIMER_OK) << last_error();
  ASSERT_EQ(pipescope_timer_end(t, nullptr), PIPESCOPE_TIMER_OK);
  ASSERT_EQ(pipescope_timer_free(t), PIPESCOPE_TIMER_OK);
  const Read r = read_all(path);
  EXPECT_EQ(r.result.problems, 0u);
  ASSERT_EQ(r.records.size(), 3u);
  EXPECT_EQ(r.records[0].micro_batch, 0);
  EXPECT_EQ(r.records[1].micro_batch, 1);
  EXPECT_EQ(r.records[2].micro_batch, 3);
}

}  // namespace
}  // namespace pipescope
