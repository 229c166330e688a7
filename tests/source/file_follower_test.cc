// source/file_follower.h: only whole appended lines, from a kept offset; a
// truncated or replaced file read again from its start; a missing file.
#include "source/file_follower.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/temp_dir.h"

namespace pipescope {
namespace {

using testing::TempDir;

void append(const std::string& path, const std::string& text) {
  std::FILE* out = std::fopen(path.c_str(), "ab");
  std::fwrite(text.data(), 1, text.size(), out);
  std::fclose(out);
}

TEST(FileFollower, HandsOutWholeLinesOnly) {
  TempDir dir;
  const std::string path = dir.write("log", "");
  FileFollower follower(path);
  EXPECT_EQ(follower.poll().lines, "");
  append(path, "one\ntw");
  FollowedBytes got = follower.poll();
  EXPECT_EQ(got.lines, "one\n");
  EXPECT_EQ(got.pending, 2u);
  EXPECT_FALSE(got.restarted);
  append(path, "o\nthree");
  EXPECT_EQ(follower.poll().lines, "two\n");
  EXPECT_EQ(follower.poll().lines, "");  // nothing new, "three" still open
  append(path, "\n");
  EXPECT_EQ(follower.poll().lines, "three\n");
  EXPECT_EQ(follower.offset(), 14u);
}

TEST(FileFollower, LongBacklogInLooksOfAtMostMaxBytes) {
  TempDir dir;
  const std::string path = dir.write("log", "aaaa\nbbbb\ncccc\n");
  FileFollower follower(path, 12);
  EXPECT_EQ(follower.poll().lines, "aaaa\nbbbb\n");
  EXPECT_EQ(follower.poll().lines, "cccc\n");
}

TEST(FileFollower, TruncatedFileIsReadFromItsStart) {
  TempDir dir;
  const std::string path = dir.write("log", "old line 1\nold line 2\n");
  FileFollower follower(path);
  EXPECT_EQ(follower.poll().lines, "old line 1\nold line 2\n");
  std::filesystem::resize_file(path, 0);
  FollowedBytes got = follower.poll();
  EXPECT_TRUE(got.restarted);
  EXPECT_EQ(got.lines, "");
  append(path, "new\n");
  got = follower.poll();
  EXPECT_FALSE(got.restarted);
  EXPECT_EQ(got.lines, "new\n");
}

TEST(FileFollower, TruncatedAndRewrittenPastItsOldSizeBetweenLooksIsReadFromItsStart) {
  // copytruncate, then the writer logs more than the old size before the
  // next look: same inode, a larger size, but the bytes before the kept
  // offset are not the ones handed out.
  TempDir dir;
  const std::string path = dir.write("log", "old line 1\nold line 2\n");
  FileFollower follower(path);
  EXPECT_EQ(follower.poll().lines, "old line 1\nold line 2\n");
  std::filesystem::resize_file(path, 0);
  append(path, "a much longer new line 1\nnew line 2\n");
  FollowedBytes got = follower.poll();
  EXPECT_TRUE(got.restarted);
  EXPECT_EQ(got.lines, "a much longer new line 1\nnew line 2\n");
  // Appending alone is no restart.
  append(path, "new line 3\n");
  got = follower.poll();
  EXPECT_FALSE(got.restarted);
  EXPECT_EQ(got.lines, "new line 3\n");
}

TEST(FileFollower, ReplacedFileIsReadFromItsStart) {
  TempDir dir;
  const std::string path = dir.write("log", "old line\n");
  FileFollower follower(path);
  EXPECT_EQ(follower.poll().lines, "old line\n");
  std::filesystem::rename(path, path + ".1");
  TempDir::write_to(path, "a longer new first line\n");  // a new inode, bigger than before
  FollowedBytes got = follower.poll();
  EXPECT_TRUE(got.restarted);
  EXPECT_EQ(got.lines, "a longer new first line\n");
}

TEST(FileFollower, MissingFileSaysWhyAndIsPickedUpLater) {
  TempDir dir;
  FileFollower follower(dir / "log");
  EXPECT_EQ(follower.poll().error, "No such file or directory");
  dir.write("log", "x\n");
  FollowedBytes got = follower.poll();
  EXPECT_EQ(got.error, "");
  EXPECT_FALSE(got.restarted);
  EXPECT_EQ(got.lines, "x\n");
}

}  // namespace
}  // namespace pipescope
