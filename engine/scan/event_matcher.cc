#include "scan/event_matcher.h"

#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <stdexcept>

#include "scan/hyperscan_form.h"

#if PIPESCOPE_HAVE_HYPERSCAN
#include <hs/hs.h>
#endif

namespace pipescope {

struct EventMatcher::Compiled {
#if PIPESCOPE_HAVE_HYPERSCAN
  hs_database_t* database = nullptr;
#endif
  std::vector<std::unique_ptr<RE2>> confirm;
  /// Each pattern's capture names in group order ("" for an unnamed group).
  std::vector<std::vector<std::string>> capture_names;

  ~Compiled() {
#if PIPESCOPE_HAVE_HYPERSCAN
    hs_free_database(database);
#endif
  }
};

bool EventMatcher::available() { return PIPESCOPE_HAVE_HYPERSCAN != 0; }

std::string EventMatcher::first_pass() {
  if (!available()) return "off (built without Hyperscan)";
  LiteralSetSearch::Kernel kernel;
  try {
    kernel = LiteralSetSearch::chosen_kernel();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  std::string out;
  switch (kernel) {
    case LiteralSetSearch::Kernel::vbmi:
      out = "literal search, vbmi kernel (AVX-512 VBMI, 64 bytes a step)";
      break;
    case LiteralSetSearch::Kernel::avx2:
      out = "literal search, avx2 kernel (AVX2, 32 bytes a step)";
      break;
    default:
      out = "Hyperscan reads every byte (the literal search would run its portable kernel)";
  }
  if (const char* forced = std::getenv(LiteralSetSearch::kKernelVariable);
      forced != nullptr && *forced != '\0') {
    out += std::string(", as ") + LiteralSetSearch::kKernelVariable + " asks";
  }
  return out;
}

namespace {

[[noreturn]] void reject(const EventPattern& p, std::string_view engine, std::string_view why) {
  throw EventLibraryError(p.origin + ": the regex of [" + p.id + "] is rejected by " +
                          std::string(engine) + ": " + std::string(why));
}

}  // namespace

#if PIPESCOPE_HAVE_HYPERSCAN
namespace {

/// Where compiled databases are kept: $PIPESCOPE_CACHE_DIR ("off": nowhere),
/// else $XDG_CACHE_HOME/pipescope, else ~/.cache/pipescope; "" for none.
std::filesystem::path cache_dir() {
  if (const char* dir = std::getenv("PIPESCOPE_CACHE_DIR")) {
    return std::string_view(dir) == "off" ? std::filesystem::path() : std::filesystem::path(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "pipescope";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "pipescope";
  }
  return {};
}

/// FNV-1a over everything the compiled database depends on.
std::uint64_t database_key(const std::vector<const char*>& expressions,
                           const std::vector<unsigned>& flags, const hs_platform_info_t& platform) {
  std::uint64_t h = 14695981039346656037ULL;
  auto mix = [&](const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  };
  const std::string_view version = hs_version();
  mix(version.data(), version.size());
  mix(&platform, sizeof platform);
  for (std::size_t i = 0; i < expressions.size(); ++i) {
    mix(expressions[i], std::strlen(expressions[i]) + 1);  // with its NUL: a separator
    mix(&flags[i], sizeof flags[i]);
  }
  return h;
}

/// The database cached under `path`, or null (missing, damaged, or made for
/// another Hyperscan or machine).
hs_database_t* load_cached(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  const std::string data = bytes.str();
  hs_database_t* db = nullptr;
  if (hs_deserialize_database(data.data(), data.size(), &db) != HS_SUCCESS) return nullptr;
  return db;
}

/// Keeps `db` under `path` for the next run: written to a temporary file,
/// then renamed, so that readers never see half of it. Failures are ignored:
/// the cache only saves the compile time (~70 ms for the shipped library).
void store_cached(const hs_database_t* db, const std::filesystem::path& path) {
  char* bytes = nullptr;
  std::size_t length = 0;
  if (hs_serialize_database(db, &bytes, &length) != HS_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path temp =
      path.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (out) out.write(bytes, static_cast<std::streamsize>(length));
    out.close();
    if (out) std::filesystem::rename(temp, path, ec);
  }
  std::filesystem::remove(temp, ec);  // after a failed write or rename
  std::free(bytes);
}

}  // namespace
#endif

EventMatcher::EventMatcher(const EventLibrary& library, EventSearch search)
    : compiled_(std::make_unique<Compiled>()) {
  if (!available()) {
    throw std::runtime_error("this pipescope was built without Hyperscan: log events are off");
  }
  // The literal analysis (about 2 ms for the shipped library) runs beside
  // the RE2 and Hyperscan compiles below: at start-up the other cores wait.
  // Where no thread can be started it runs when it is asked for.
  std::future<std::unique_ptr<EventPrefilter>> prefilter;
  // (Throws on a $PIPESCOPE_LITERAL_SEARCH that names no kernel this CPU runs.)
  const LiteralSetSearch::Kernel kernel = LiteralSetSearch::chosen_kernel();
  if (search == EventSearch::prefiltered ||
      (search == EventSearch::automatic && kernel != LiteralSetSearch::Kernel::portable)) {
    std::vector<std::string> regexes;
    for (const EventPattern& p : library.patterns) regexes.push_back(p.regex);
    prefilter = std::async(
        std::launch::async | std::launch::deferred,
        [regexes = std::move(regexes), kernel] { return EventPrefilter::make(regexes, kernel); });
  }
  // RE2 first: its messages are the clearer, and it must accept every
  // pattern to confirm lines and take captures.
  for (const EventPattern& p : library.patterns) {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);  // bytes, as Hyperscan reads them
    options.set_log_errors(false);
    auto re = std::make_unique<RE2>(p.regex, options);
    if (!re->ok()) reject(p, "RE2", re->error());
    std::vector<std::string> names(static_cast<std::size_t>(re->NumberOfCapturingGroups()));
    for (const auto& [name, index] : re->NamedCapturingGroups()) {
      names[static_cast<std::size_t>(index - 1)] = name;
    }
    compiled_->confirm.push_back(std::move(re));
    compiled_->capture_names.push_back(std::move(names));
    kinds_.push_back({p.id, p.category, p.severity, p.description});
  }
  // Compiled even when the literal search is the first pass: a regex is
  // accepted or refused alike on every machine.
  compile_hyperscan(library);
  // Where every pattern requires a literal (else null: Hyperscan reads all).
  if (prefilter.valid()) prefilter_ = prefilter.get();
}

void EventMatcher::compile_hyperscan(const EventLibrary& library) {
#if PIPESCOPE_HAVE_HYPERSCAN
  if (library.patterns.empty()) return;
  // Each regex in the form that finds every line RE2 matches (hyperscan_form.h).
  std::vector<std::string> forms;
  for (const EventPattern& p : library.patterns) {
    std::optional<std::string> form = hyperscan_form(p.regex);
    if (!form) {
      reject(p, "Hyperscan",
             "it uses a construct Hyperscan cannot read as RE2 does (a \\p{..} class, or "
             "caseless matching of bytes beyond ASCII)");
    }
    forms.push_back(std::move(*form));
  }
  std::vector<const char*> expressions;
  std::vector<unsigned> flags, ids;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    expressions.push_back(forms[i].c_str());
    // Per line, as RE2 confirms it: ^ and $ at line edges. Prefilter mode:
    // a construct Hyperscan lacks is widened, never narrowed; RE2 decides.
    flags.push_back(HS_FLAG_MULTILINE | HS_FLAG_PREFILTER);
    ids.push_back(static_cast<unsigned>(i));
  }
  // A database compiled before for this library, Hyperscan and machine.
  hs_platform_info_t platform{};
  hs_populate_platform(&platform);
  std::filesystem::path cached;
  if (const std::filesystem::path dir = cache_dir(); !dir.empty()) {
    char name[40];
    std::snprintf(name, sizeof name, "events-%016llx.hsdb",
                  static_cast<unsigned long long>(database_key(expressions, flags, platform)));
    cached = dir / name;
    if ((compiled_->database = load_cached(cached)) != nullptr) return;
  }
  hs_compile_error_t* error = nullptr;
  if (hs_compile_multi(expressions.data(), flags.data(), ids.data(),
                       static_cast<unsigned>(expressions.size()), HS_MODE_BLOCK, nullptr,
                       &compiled_->database, &error) != HS_SUCCESS) {
    const std::string message = error != nullptr ? error->message : "unknown error";
    const int which = error != nullptr ? error->expression : -1;
    hs_free_compile_error(error);
    if (which >= 0 && static_cast<std::size_t>(which) < library.patterns.size()) {
      reject(library.patterns[static_cast<std::size_t>(which)], "Hyperscan", message);
    }
    throw EventLibraryError("the event library is rejected by Hyperscan: " + message);
  }
  if (!cached.empty()) store_cached(compiled_->database, cached);
#else
  (void)library;
#endif
}

EventMatcher::~EventMatcher() = default;

EventMatcher::Scratch::Scratch(const EventMatcher& matcher)
#if PIPESCOPE_HAVE_HYPERSCAN
    // Hyperscan's scratch only where Hyperscan is the first pass.
    : hyperscan_(matcher.prefilter_ ? nullptr : matcher.compiled_->database)
#else
    : hyperscan_(nullptr)
#endif
{
  if (matcher.prefilter_) prefilter_ = std::make_unique<EventPrefilter::State>(*matcher.prefilter_);
}

#if PIPESCOPE_HAVE_HYPERSCAN
namespace {

struct Hits {
  std::vector<std::pair<std::size_t, std::uint32_t>>* hits;  // (end offset in the block, pattern)
  std::size_t base = 0;                                      // the piece's offset
};

int on_hit(unsigned id, unsigned long long /*from*/, unsigned long long to, unsigned /*flags*/,
           void* context) {
  Hits& h = *static_cast<Hits*>(context);
  h.hits->emplace_back(h.base + static_cast<std::size_t>(to), id);
  return 0;
}

}  // namespace
#endif

void EventMatcher::scan(std::string_view block, Scratch& scratch,
                        std::vector<EventMatch>& out) const {
  if (prefilter_ != nullptr) {
    auto& candidates = scratch.candidates_;
    candidates.clear();
    prefilter_->candidates(block, *scratch.prefilter_, candidates);
    for (const EventPrefilter::Candidate& c : candidates) {
      if (matches(c.pattern, block.substr(c.line_begin, c.line_end - c.line_begin))) {
        out.push_back({c.line_begin, c.line_end, c.pattern});
      }
    }
    return;
  }
#if PIPESCOPE_HAVE_HYPERSCAN
  if (compiled_->database == nullptr || block.empty()) return;
  auto& hits = scratch.hits_;
  hits.clear();
  Hits context{&hits, 0};
  scan_block(compiled_->database, block, scratch.hyperscan_, on_hit, &context, &context.base);
  if (hits.empty()) return;
  std::sort(hits.begin(), hits.end());
  // Lines are disjoint ranges, so a line's hits are consecutive in end order.
  std::size_t i = 0;
  std::vector<std::uint32_t> patterns;
  while (i < hits.size()) {
    const std::size_t last = hits[i].first - 1;  // the match's last byte
    const void* nl_before = last > 0 ? memrchr(block.data(), '\n', last) : nullptr;
    // A match ending on a '\n' belongs to the line that '\n' ends.
    const std::size_t line_begin =
        nl_before ? static_cast<const char*>(nl_before) - block.data() + 1 : 0;
    const void* nl_after = std::memchr(block.data() + last, '\n', block.size() - last);
    const std::size_t line_end =
        nl_after ? static_cast<const char*>(nl_after) - block.data() : block.size();
    patterns.clear();
    for (; i < hits.size() && hits[i].first - 1 <= line_end; ++i)
      patterns.push_back(hits[i].second);
    std::sort(patterns.begin(), patterns.end());
    patterns.erase(std::unique(patterns.begin(), patterns.end()), patterns.end());
    const std::string_view line = block.substr(line_begin, line_end - line_begin);
    for (std::uint32_t p : patterns) {
      if (matches(p, line)) out.push_back({line_begin, line_end, p});
    }
  }
#else
  (void)block;
  (void)scratch;
  (void)out;
#endif
}

bool EventMatcher::matches(std::uint32_t pattern, std::string_view line) const {
  return RE2::PartialMatch(line, *compiled_->confirm[pattern]);
}

std::vector<std::pair<std::string, std::string>> EventMatcher::captures(
    std::uint32_t pattern, std::string_view line) const {
  const RE2& re = *compiled_->confirm[pattern];
  const auto& names = compiled_->capture_names[pattern];
  std::vector<std::pair<std::string, std::string>> out;
  if (names.empty()) return out;
  std::vector<re2::StringPiece> groups(names.size() + 1);
  if (!re.Match(line, 0, line.size(), RE2::UNANCHORED, groups.data(),
                static_cast<int>(groups.size()))) {
    return out;
  }
  for (std::size_t g = 0; g < names.size(); ++g) {
    if (names[g].empty()) continue;
    out.emplace_back(names[g], std::string(groups[g + 1].data(), groups[g + 1].size()));
  }
  return out;
}

}  // namespace pipescope
