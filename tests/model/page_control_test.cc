// page_control.h: faulting pages in ahead of a writer never changes a byte,
// even while another thread writes them; giving back an array's unused end
// keeps every byte it holds, the partly used page included.
#include "model/page_control.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace pipescope {
namespace {

constexpr std::size_t kBytes = std::size_t{8} << 20;

unsigned char pattern(std::size_t i) { return static_cast<unsigned char>(i * 131 + 7); }

TEST(PageControl, PopulatingKeepsWhatIsWrittenMeanwhile) {
  auto* data = static_cast<unsigned char*>(std::aligned_alloc(4096, kBytes));
  ASSERT_NE(data, nullptr);
  // One thread writes the array front to back while another faults it in,
  // in pieces that cross page boundaries, ahead of and behind the writer.
  std::thread writer([&] {
    for (std::size_t i = 0; i < kBytes; ++i) data[i] = pattern(i);
  });
  for (std::size_t at = 0; at < kBytes; at += 12'345) {
    populate_for_writing(data + at, std::min<std::size_t>(100'000, kBytes - at));
  }
  writer.join();
  populate_for_writing(data, kBytes);  // everything there already: nothing changes
  for (std::size_t i = 0; i < kBytes; ++i) ASSERT_EQ(data[i], pattern(i)) << i;
  std::free(data);
}

TEST(PageControl, ReleasingTheUnusedEndKeepsTheUsedBytes) {
  auto* data = static_cast<unsigned char*>(std::aligned_alloc(4096, kBytes));
  ASSERT_NE(data, nullptr);
  for (std::size_t i = 0; i < kBytes; ++i) data[i] = pattern(i);
  // Used up to the middle of a page: that page is kept whole.
  const std::size_t used = 3 * 4096 + 100;
  release_unused_pages(data, used, kBytes);
  for (std::size_t i = 0; i < 4 * 4096; ++i) ASSERT_EQ(data[i], pattern(i)) << i;
  // The pages after it were given back: they read as zero now, and can be
  // written again.
  EXPECT_EQ(data[4 * 4096], 0);
  EXPECT_EQ(data[kBytes - 1], 0);
  data[kBytes - 1] = 1;
  EXPECT_EQ(data[kBytes - 1], 1);
  // Nothing unused, or a capacity below the use: nothing is given back.
  release_unused_pages(data, kBytes, kBytes);
  release_unused_pages(data, kBytes, 0);
  EXPECT_EQ(data[0], pattern(0));
  std::free(data);
}

}  // namespace
}  // namespace pipescope
