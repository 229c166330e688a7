#include "scan/prefilter.h"

#include <hs/hs.h>

#include <stdexcept>
#include <string>

#include "scan/job_line_parser.h"

namespace pipescope {

namespace {
struct ScanContext {
  bool (*callback)(void*, LiteralId, std::size_t);
  void* user;
};

int on_hs_match(unsigned int id, unsigned long long /*from*/, unsigned long long to,
                unsigned int /*flags*/, void* context) {
  auto* ctx = static_cast<ScanContext*>(context);
  return ctx->callback(ctx->user, static_cast<LiteralId>(id), static_cast<std::size_t>(to)) ? 0 : 1;
}
}  // namespace

Prefilter::Prefilter() {
  const std::string_view literals[] = {kJobLineLiteral, kStepStartLiteral};
  const char* expressions[] = {literals[0].data(), literals[1].data()};
  const std::size_t lengths[] = {literals[0].size(), literals[1].size()};
  const unsigned flags[] = {0, 0};
  const unsigned ids[] = {static_cast<unsigned>(LiteralId::job_line),
                          static_cast<unsigned>(LiteralId::step_start)};
  hs_compile_error_t* error = nullptr;
  if (hs_compile_lit_multi(expressions, flags, ids, lengths, 2, HS_MODE_BLOCK, nullptr, &database_,
                           &error) != HS_SUCCESS) {
    std::string message = error ? error->message : "unknown error";
    hs_free_compile_error(error);
    throw std::runtime_error("Hyperscan cannot compile the line prefilter: " + message);
  }
}

Prefilter::~Prefilter() { hs_free_database(database_); }

Prefilter::Scratch::Scratch(const Prefilter& prefilter) {
  if (hs_alloc_scratch(prefilter.database_, &scratch_) != HS_SUCCESS) {
    throw std::runtime_error("Hyperscan cannot allocate scratch space");
  }
}

Prefilter::Scratch::~Scratch() { hs_free_scratch(scratch_); }

Prefilter::Scratch::Scratch(Scratch&& other) noexcept : scratch_(other.scratch_) {
  other.scratch_ = nullptr;
}

void Prefilter::scan_raw(std::string_view data, Scratch& scratch, RawCallback callback,
                         void* context) const {
  ScanContext ctx{callback, context};
  // Hyperscan's block mode takes an unsigned int length: scan in pieces that
  // overlap by the longest literal so no occurrence is cut.
  constexpr std::size_t kMaxPiece = std::size_t{1} << 30;
  const std::size_t overlap = kStepStartLiteral.size();
  std::size_t begin = 0;
  while (begin < data.size()) {
    const std::size_t length = std::min(kMaxPiece, data.size() - begin);
    struct Shifted {
      ScanContext* inner;
      std::size_t base;
      std::size_t min_end;
    } shifted{&ctx, begin, begin == 0 ? 0 : begin + overlap + 1};
    auto shift = [](unsigned int id, unsigned long long from, unsigned long long to, unsigned int f,
                    void* c) -> int {
      auto* s = static_cast<Shifted*>(c);
      const unsigned long long end = to + s->base;
      if (end < s->min_end) return 0;  // already reported by the previous piece
      return on_hs_match(id, from + s->base, end, f, s->inner);
    };
    const hs_error_t rc = hs_scan(database_, data.data() + begin, static_cast<unsigned>(length), 0,
                                  scratch.scratch_, shift, &shifted);
    if (rc == HS_SCAN_TERMINATED) return;
    if (rc != HS_SUCCESS) throw std::runtime_error("Hyperscan scan failed");
    if (begin + length == data.size()) break;
    begin += length - overlap;
  }
}

}  // namespace pipescope
