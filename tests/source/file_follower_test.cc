// source/file_follower.h: only whole appended lines, from a kept offset; a
// truncated or replaced file read again from its start; a missing file.
#include "source/file_follower.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "support/compress_util.h"
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

/// Text of `lines` numbered lines of varying length.
std::string numbered_lines(int lines) {
  std::string text;
  for (int i = 0; i < lines; ++i) {
    text += "line " + std::to_string(i) + " " + std::string(static_cast<std::size_t>(i % 37), 'x') +
            "\n";
  }
  return text;
}

/// The compressed bytes appended in pieces of 1..97 bytes, a look after each:
/// the lines handed out are the text's whole lines, in order, none twice,
/// and a line is handed out only once its '\n' was decompressed.
void follow_in_pieces(const std::string& name, const std::string& compressed,
                      const std::string& text) {
  TempDir dir;
  const std::string path = dir.write(name, "");
  FileFollower follower(path);
  std::string got;
  for (std::size_t at = 0, piece = 1; at < compressed.size();
       at += piece, piece = piece % 97 + 13) {
    append(path, compressed.substr(at, piece));
    const FollowedBytes look = follower.poll();
    ASSERT_EQ(look.error, "") << at;
    EXPECT_FALSE(look.restarted);
    got += look.lines;
    EXPECT_EQ(text.compare(0, got.size(), got), 0) << at;
    EXPECT_TRUE(got.empty() || got.back() == '\n');
  }
  EXPECT_EQ(got, text);
  EXPECT_EQ(follower.offset(), compressed.size());
}

TEST(FileFollower, GrowingGzipFileGivesItsWholeLines) {
  const std::string text = numbered_lines(3000);
  // Two members, as a writer that restarts its compressor appends them.
  follow_in_pieces("workerlog.0.gz",
                   testing::gzip(text.substr(0, 40001)) + testing::gzip(text.substr(40001)), text);
}

TEST(FileFollower, GrowingZstdFileGivesItsWholeLines) {
  const std::string text = numbered_lines(3000);
  follow_in_pieces("workerlog.0.zst",
                   testing::zstd(text.substr(0, 30007)) + testing::zstd(text.substr(30007)), text);
}

TEST(FileFollower, CompressedFileTruncatedOrReplacedStartsAFreshDecoder) {
  TempDir dir;
  const std::string path = dir.write("workerlog.0.gz", testing::gzip("one\ntwo\nthr"));
  FileFollower follower(path);
  FollowedBytes got = follower.poll();
  EXPECT_EQ(got.lines, "one\ntwo\n");
  EXPECT_EQ(got.pending, 3u);
  // Rotated: a new file (a new inode), compressed from its start.
  std::filesystem::rename(path, path + ".1");
  TempDir::write_to(path, testing::gzip("new one\nnew two\n"));
  got = follower.poll();
  EXPECT_TRUE(got.restarted);
  EXPECT_EQ(got.lines, "new one\nnew two\n");
  // copytruncate, then a new stream.
  std::filesystem::resize_file(path, 0);
  append(path, testing::gzip("third\n"));
  got = follower.poll();
  EXPECT_TRUE(got.restarted);
  EXPECT_EQ(got.lines, "third\n");
}

TEST(FileFollower, CorruptCompressedDataStopsTheFileAndSaysWhere) {
  TempDir dir;
  std::string bytes = testing::gzip(numbered_lines(200));
  const std::string path = dir.write("workerlog.0.gz", bytes.substr(0, 10));
  FileFollower follower(path);
  EXPECT_EQ(follower.poll().error, "");
  append(path, std::string(40, '\xff'));  // not deflate data
  FollowedBytes got = follower.poll();
  EXPECT_TRUE(got.corrupt);
  EXPECT_EQ(got.error.rfind("corrupt gzip data: ", 0), 0u) << got.error;
  EXPECT_NE(got.error.find(" near compressed byte "), std::string::npos) << got.error;
  append(path, "more\n");
  EXPECT_TRUE(follower.poll().corrupt);  // stopped until truncated or replaced
}

}  // namespace
}  // namespace pipescope
