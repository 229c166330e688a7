// AtomicFile: the destination only ever holds the old file or the complete new
// one, and no temporary file survives, whatever happens while writing.
#include "export/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include "support/temp_dir.h"

namespace pipescope {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ExportAtomic, CommitWritesAndLeavesNoTemp) {
  TempDir dir;
  const std::string path = dir / "summary.json";
  {
    AtomicFile file(path);
    EXPECT_EQ(file.path(), path);
    EXPECT_EQ(fs::path(file.temp_path()).parent_path(), dir.path());
    EXPECT_NE(file.temp_path().find(".summary.json.tmp-"), std::string::npos);
    file.append("hello ");
    fmt::format_to(std::back_inserter(file.buffer()), "{} {}", 42, "world");
    file.flush_if_full();
    file.append('\n');
    EXPECT_FALSE(fs::exists(path));  // nothing visible before commit
    file.commit();
    EXPECT_TRUE(file.temp_path().empty());
  }
  EXPECT_EQ(read_file(path), "hello 42 world\n");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"summary.json"});
}

TEST(ExportAtomic, CommitReplacesExistingFile) {
  TempDir dir;
  const std::string path = dir / "out.json";
  TempDir::write_to(path, "old contents that are longer");
  AtomicFile file(path);
  file.append("new");
  file.commit();
  EXPECT_EQ(read_file(path), "new");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.json"});
}

TEST(ExportAtomic, DestroyWithoutCommitKeepsOldFile) {
  TempDir dir;
  const std::string path = dir / "out.json";
  TempDir::write_to(path, "old");
  {
    AtomicFile file(path, /*block_size=*/8);
    file.append("0123456789abcdefghij");  // larger than a block: reaches the disk
    file.append("more");
  }
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"out.json"});
}

TEST(ExportAtomic, SmallBlocksKeepOrder) {
  TempDir dir;
  const std::string path = dir / "big.txt";
  std::string expected;
  {
    AtomicFile file(path, /*block_size=*/16);
    for (int i = 0; i < 1000; ++i) {
      const std::string piece = std::to_string(i) + (i % 7 == 0 ? std::string(40, 'x') : ",");
      expected += piece;
      if (i % 2 == 0) {
        file.append(piece);
      } else {
        file.buffer().append(piece.data(), piece.data() + piece.size());
        file.flush_if_full();
      }
    }
    file.commit();
  }
  EXPECT_EQ(read_file(path), expected);
}

TEST(ExportAtomic, MoveTransfersOwnership) {
  TempDir dir;
  const std::string path = dir / "moved.txt";
  AtomicFile first(path);
  first.append("abc");
  AtomicFile second(std::move(first));
  second.append("def");
  AtomicFile third(dir / "other.txt");
  third = std::move(second);  // discards other.txt's temporary file
  third.commit();
  EXPECT_EQ(read_file(path), "abcdef");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"moved.txt"});
}

TEST(ExportAtomic, MissingFolderFailsWithPath) {
  TempDir dir;
  const std::string path = dir / "no/such/folder/summary.json";
  try {
    AtomicFile file(path);
    FAIL() << "expected an error";
  } catch (const std::system_error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write " + path + ": No such file or directory");
    EXPECT_EQ(e.code().value(), ENOENT);
  }
  EXPECT_TRUE(entries(dir.path()).empty());
}

TEST(ExportAtomic, FolderRemovedBeforeCommitFails) {
  TempDir dir;
  const fs::path sub = dir.path() / "out";
  fs::create_directories(sub);
  const std::string path = (sub / "trace.json").string();
  {
    AtomicFile file(path);
    file.append("{}");
    fs::remove_all(sub);
    try {
      file.commit();
      FAIL() << "expected an error";
    } catch (const std::system_error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot write " + path), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(fs::exists(sub));
}

// Writing past RLIMIT_FSIZE fails with EFBIG: a real write error, even as root.
TEST(ExportAtomic, WriteErrorKeepsOldFileAndRemovesTemp) {
  TempDir dir;
  const std::string path = dir / "summary.json";
  TempDir::write_to(path, "old");

  struct sigaction ignore {};
  struct sigaction previous {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &previous), 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);

  std::string message;
  {
    AtomicFile file(path, /*block_size=*/1024);
    try {
      for (int i = 0; i < 100; ++i) file.append(std::string(1000, 'x'));
      file.commit();
    } catch (const std::system_error& e) {
      message = e.what();
    }
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &previous, nullptr);

  EXPECT_EQ(message, "cannot write " + path + ": File too large");
  EXPECT_EQ(read_file(path), "old");
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"summary.json"});
}

TEST(ExportAtomic, EnsureOutputDirCreatesParents) {
  TempDir dir;
  const fs::path nested = dir.path() / "a" / "b" / "c";
  ensure_output_dir(nested.string());
  EXPECT_TRUE(fs::is_directory(nested));
  ensure_output_dir(nested.string());  // existing folder: fine
  EXPECT_TRUE(fs::is_directory(nested));
}

// A run killed before commit() leaves ".summary.json.tmp-PID-N"; the next run
// writing the folder removes it once PID no longer runs, and keeps the
// temporary files of processes alive (its own, and another running one's).
TEST(ExportAtomic, TheNextRunRemovesTheTempFilesOfAKilledOne) {
  TempDir dir;
  const std::string out = dir / "out";
  ensure_output_dir(out);
  // A pid that ran and is gone: a child that exited and was reaped.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  const std::string dead = out + "/.summary.json.tmp-" + std::to_string(child) + "-0";
  const std::string mine = out + "/.trace.json.tmp-" + std::to_string(::getpid()) + "-7";
  const std::string parent = out + "/.report.html.tmp-" + std::to_string(::getppid()) + "-1";
  for (const std::string& f : {dead, mine, parent}) TempDir::write_to(f, "partial");
  TempDir::write_to(out + "/.notes.tmp-x", "not ours");
  ensure_output_dir(out);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(mine));
  EXPECT_TRUE(fs::exists(parent));
  EXPECT_TRUE(fs::exists(out + "/.notes.tmp-x"));
}

TEST(ExportAtomic, EnsureOutputDirRejectsFile) {
  TempDir dir;
  const std::string file = dir / "plain";
  TempDir::write_to(file, "x");
  for (const std::string& target : {file, file + "/sub"}) {
    try {
      ensure_output_dir(target);
      FAIL() << "expected an error for " << target;
    } catch (const std::system_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cannot create output folder " + target + ": ", 0), 0u)
          << e.what();
    }
  }
}

// A report written at once (check's markdown, diff.json, watch's .prom
// file): the parents made, the old file replaced whole, no temporary left.
TEST(ExportAtomic, WriteFileAtomicallyReplacesWholeAndMakesFolders) {
  TempDir dir;
  const std::string path = dir / "reports/ci/pipescope.prom";
  write_file_atomically(path, "old\n");
  write_file_atomically(path, "new\n");
  EXPECT_EQ(read_file(path), "new\n");
  EXPECT_EQ(entries(dir.path() / "reports/ci"), std::vector<std::string>{"pipescope.prom"});
  // A parent that is a file: the error names it, nothing is written.
  TempDir::write_to(dir / "plain", "x");
  try {
    write_file_atomically(dir / "plain/report.md", "text");
    FAIL() << "expected an error";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create output folder " + (dir / "plain")),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read_file(dir / "plain"), "x");
}

TEST(ExportAtomic, TempNamesAreRecognised) {
  TempDir dir;
  AtomicFile file(dir / "workerlog.3");
  EXPECT_TRUE(io::is_atomic_temp_name(fs::path(file.temp_path()).filename().string()))
      << file.temp_path();
  for (const char* other : {"workerlog.3", ".workerlog.3", ".x.tmp-", ".x.tmp-12", ".x.tmp-12-",
                            ".x.tmp--3", ".x.tmp-1a-2", "x.tmp-1-2", "..tmp-1-2", ".tmp-1-2"}) {
    EXPECT_FALSE(io::is_atomic_temp_name(other)) << other;
  }
  EXPECT_TRUE(io::is_atomic_temp_name(".a.tmp-1-2"));
  EXPECT_TRUE(io::is_atomic_temp_name(".expected.json.tmp-4242-17"));
}

}  // namespace
}  // namespace pipescope
