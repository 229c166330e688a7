#include "ingest/nsys_export.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "ingest/sqlite_file.h"
#include "model/errors.h"

namespace pipescope {

namespace {

constexpr std::string_view kSqliteMagic{"SQLite format 3\0", 16};
constexpr const char* kActivityTables[] = {
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"};
constexpr std::int64_t kPushPop = 59, kStartEnd = 60;  // NVTX range event types
constexpr std::int64_t kDomainCreate = 75;             // names a domainId
constexpr std::uint64_t kSchemaStaticStart = std::uint64_t{1} << 24;
constexpr std::size_t kPayloadHeader = 32;  // domainId, schemaId, payloadSize, size: u64 each

/// NCCL's static payload schema of a call (src/include/nvtx.h NVTX_SID_*),
/// for a payload stored without the export's header.
int nccl_static_schema(std::string_view call) {
  static const std::unordered_map<std::string_view, int> ids = {{"ncclCommInitRank", 0},
                                                                {"ncclCommInitAll", 1},
                                                                {"ncclCommDestroy", 2},
                                                                {"ncclCommAbort", 3},
                                                                {"ncclAllGather", 4},
                                                                {"ncclAllReduce", 5},
                                                                {"ncclBroadcast", 6},
                                                                {"ncclReduceScatter", 7},
                                                                {"ncclReduce", 8},
                                                                {"ncclSend", 9},
                                                                {"ncclRecv", 10},
                                                                {"ncclCommInitRankConfig", 11},
                                                                {"ncclCommInitRankScalable", 12},
                                                                {"ncclCommSplit", 13},
                                                                {"ncclCommFinalize", 14},
                                                                {"ncclCommShrink", 15},
                                                                {"ncclAlltoAll", 16},
                                                                {"ncclGather", 17},
                                                                {"ncclScatter", 18},
                                                                {"ncclCommRevoke", 19},
                                                                {"ncclCommGrow", 20}};
  const auto it = ids.find(call);
  return it == ids.end() ? -1 : it->second;
}

/// NVTX payload entry types (nvToolsExtPayload.h) this reader decodes: the
/// integers, by width and sign.
struct EntryType {
  int width = 0;
  bool is_signed = false;
};
EntryType entry_type(std::int64_t type) {
  switch (type) {
    case 1:
    case 11:
      return {1, true};
    case 2:
    case 12:
      return {1, false};
    case 3:
    case 13:
      return {2, true};
    case 4:
    case 14:
      return {2, false};
    case 5:
    case 15:
      return {4, true};
    case 6:
    case 16:
      return {4, false};
    case 7:
    case 9:
    case 17:
      return {8, true};
    case 8:
    case 10:
    case 18:
    case 22:
    case 23:
      return {8, false};
    default:
      return {};
  }
}

/// A payload schema: its size and its fields' names, offsets and types.
struct PayloadSchema {
  std::int64_t size = 0;
  struct Field {
    std::string name;
    std::int64_t offset = 0;
    std::int64_t type = 0;
  };
  std::vector<Field> fields;
};
using SchemaKey = std::pair<std::int64_t, std::int64_t>;  // domainId, schemaId

struct Tables {
  std::vector<SqliteFile::Table> all;
  const SqliteFile::Table* find(std::string_view name) const {
    for (const auto& t : all) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }
};

std::string sql_name(std::string_view name) { return fmt::format("\"{}\"", name); }

std::map<SchemaKey, PayloadSchema> read_schemas(const SqliteFile& db, const Tables& tables) {
  std::map<SchemaKey, PayloadSchema> raw;
  std::map<SchemaKey, std::map<std::int64_t,
                               std::tuple<std::string, std::optional<std::int64_t>, std::int64_t>>>
      entries;
  const auto* schemas = tables.find("NVTX_PAYLOAD_SCHEMAS");
  if (schemas && schemas->has("domainId") && schemas->has("schemaId") &&
      schemas->has("payloadSize")) {
    SqliteQuery q = db.query("SELECT domainId, schemaId, payloadSize FROM NVTX_PAYLOAD_SCHEMAS");
    while (q.next()) {
      const auto dom = q.integer(0), sid = q.integer(1);
      if (dom && sid) raw.try_emplace({*dom, *sid}, PayloadSchema{q.integer(2).value_or(-1), {}});
    }
  }
  const auto* fields = tables.find("NVTX_PAYLOAD_SCHEMA_ENTRIES");
  if (fields && fields->has("domainId") && fields->has("schemaId") && fields->has("idx") &&
      fields->has("type") && fields->has("name") && fields->has("offset")) {
    SqliteQuery q = db.query(
        "SELECT domainId, schemaId, idx, \"type\", name, \"offset\" FROM "
        "NVTX_PAYLOAD_SCHEMA_ENTRIES");
    while (q.next()) {
      const auto dom = q.integer(0), sid = q.integer(1), idx = q.integer(2);
      if (!dom || !sid || !idx || !raw.count({*dom, *sid})) continue;
      const auto name = q.bytes(4);
      entries[{*dom, *sid}].try_emplace(*idx, std::string(name.value_or(std::string_view())),
                                        q.integer(5), q.integer(3).value_or(-1));
    }
  }
  for (auto& [key, schema] : raw) {
    std::int64_t at = 0;
    for (const auto& [idx, entry] : entries[key]) {
      const auto& [name, given, type] = entry;
      const int width = entry_type(type).width;
      std::int64_t offset = 0;
      if (given) {
        offset = *given;
      } else {
        offset = at;
        if (width > 0) offset = (offset + width - 1) / width * width;
      }
      schema.fields.push_back({name, offset, type});
      at = offset + width;
    }
  }
  return raw;
}

/// The integer fields of a NCCL range's payload that the reader needs.
void decode_payload(std::string_view blob, std::int64_t domain, std::string_view call,
                    const std::map<SchemaKey, PayloadSchema>& schemas, NsysNcclCall& out) {
  if (blob.empty()) return;
  const PayloadSchema* layout = nullptr;
  std::string_view payload;
  auto u64 = [&](std::size_t at) {
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | static_cast<unsigned char>(blob[at + b]);
    return v;
  };
  if (blob.size() >= kPayloadHeader) {
    const std::uint64_t sid = u64(8), size = u64(16);
    const auto it = schemas.find({domain, static_cast<std::int64_t>(sid)});
    if (it != schemas.end() && size <= blob.size() - kPayloadHeader) {
      layout = &it->second;
      payload = blob.substr(kPayloadHeader, size);
    }
  }
  if (layout == nullptr) {
    const int sid = nccl_static_schema(call);
    if (sid >= 0) {
      const auto it = schemas.find({domain, static_cast<std::int64_t>(kSchemaStaticStart) + sid});
      if (it != schemas.end() && it->second.size == static_cast<std::int64_t>(blob.size())) {
        layout = &it->second;
        payload = blob;
      }
    }
  }
  if (layout == nullptr) return;
  for (const PayloadSchema::Field& f : layout->fields) {
    const EntryType t = entry_type(f.type);
    if (t.width == 0 || f.offset < 0 ||
        static_cast<std::uint64_t>(f.offset) + static_cast<std::uint64_t>(t.width) >
            payload.size()) {
      continue;
    }
    std::uint64_t bits = 0;
    for (int b = t.width - 1; b >= 0; --b) {
      bits =
          (bits << 8) | static_cast<unsigned char>(payload[static_cast<std::size_t>(f.offset) + b]);
    }
    std::int64_t value = static_cast<std::int64_t>(bits);
    if (t.is_signed && t.width < 8 && (bits >> (t.width * 8 - 1)) & 1) {
      value = static_cast<std::int64_t>(bits | (~std::uint64_t{0} << (t.width * 8)));
    }
    if (f.name == "NCCL communicator ID") out.comm = bits;
    if (f.name == "Peer rank") out.peer = value;
    if (f.name == "Rank") out.rank = value;
    if (f.name == "No. of ranks") out.nranks = value;
  }
}

bool env_key(std::string_view key) {
  if (key.empty() || !(std::isalpha(static_cast<unsigned char>(key[0])) || key[0] == '_')) {
    return false;
  }
  return std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void add_env_pairs(const std::vector<std::string>& items, std::map<std::string, std::string>& env) {
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || !env_key(std::string_view(item).substr(0, eq))) continue;
    std::string value = item.substr(eq + 1);
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') {
      value = value.substr(1, value.size() - 2);
    }
    env.try_emplace(item.substr(0, eq), std::move(value));
  }
}

/// DeviceEnvironment: NUL-separated (2.x) or ';'-separated (3.x); a piece
/// that is no KEY=... continues the previous value.
std::vector<std::string> split_device_environment(std::string_view text) {
  std::vector<std::string> items;
  if (text.find('\0') != std::string_view::npos) {
    std::size_t at = 0;
    while (at <= text.size()) {
      const auto end = std::min(text.find('\0', at), text.size());
      if (end > at) items.emplace_back(text.substr(at, end - at));
      at = end + 1;
    }
    return items;
  }
  std::size_t at = 0;
  while (true) {
    const auto end = std::min(text.find(';', at), text.size());
    const std::string_view piece = text.substr(at, end - at);
    const auto eq = piece.find('=');
    if (!items.empty() &&
        (eq == std::string_view::npos || eq == 0 || !env_key(piece.substr(0, eq)))) {
      items.back() += ';';
      items.back() += piece;
    } else {
      items.emplace_back(piece);
    }
    if (end == text.size()) break;
    at = end + 1;
  }
  return items;
}

std::optional<int> env_int(const std::map<std::string, std::string>& env,
                           std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    const auto it = env.find(key);
    if (it == env.end()) continue;
    std::string_view v = it->second;
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    int out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (!v.empty() && ec == std::errc{} && end == v.data() + v.size() && v.front() != '-') {
      return out;
    }
  }
  return std::nullopt;
}

/// The runtime table's rows, in 16 bytes each (the table has one or more
/// rows per activity), kept until the activities are read: for each
/// (process, correlationId), the runtime or driver row (eventClass 0, 1)
/// first, then the earliest, then the first row. A row is its stored start,
/// its correlation as 32 bits (CUPTI's width) and its thread's low 24 bits
/// (the process is the rest of globalTid), its process's place among the
/// first 127 processes and its class; a row that does not fit (a 128th
/// process, a correlation beyond 32 bits) is kept whole, apart.
class LaunchTable {
 public:
  struct Found {
    std::int64_t start = 0;   // stored time
    std::int64_t thread = 0;  // globalTid
  };
  void reserve(std::size_t rows) { rows_.reserve(rows); }
  /// A row, in table order.
  void add(std::int64_t start, std::int64_t tid, std::int64_t correlation, bool other_class) {
    const std::int64_t key = tid >> 24;
    const int process = index_of(key);
    if (process >= 0 && correlation >= 0 && correlation <= UINT32_MAX) {
      rows_.push_back({start, static_cast<std::uint32_t>(correlation),
                       static_cast<std::uint32_t>(tid & 0xFFFFFF) |
                           static_cast<std::uint32_t>(process) << 24 |
                           (other_class ? 1U << 31 : 0U)});
      return;
    }
    const auto [it, fresh] = wide_.try_emplace({key, correlation}, Wide{start, tid, other_class});
    if (!fresh &&
        std::tie(other_class, start) < std::tie(it->second.other_class, it->second.start)) {
      it->second = Wide{start, tid, other_class};
    }
  }
  /// Keeps the best row of each (process, correlation); call once, after
  /// the last add.
  void finish() {
    // Stable: rows that tie keep table order, the first one kept.
    std::stable_sort(rows_.begin(), rows_.end(), [](const Row& a, const Row& b) {
      return std::tuple(a.packed >> 24 & 0x7F, a.correlation, a.packed >> 31, a.start) <
             std::tuple(b.packed >> 24 & 0x7F, b.correlation, b.packed >> 31, b.start);
    });
    rows_.erase(std::unique(rows_.begin(), rows_.end(),
                            [](const Row& a, const Row& b) {
                              return (a.packed >> 24 & 0x7F) == (b.packed >> 24 & 0x7F) &&
                                     a.correlation == b.correlation;
                            }),
                rows_.end());
  }
  /// The kept row of (process `key`, `correlation`) into `out`; false: none.
  bool find(std::int64_t key, std::int64_t correlation, Found& out) const {
    const auto it = std::find(processes_.begin(), processes_.end(), key);
    if (it != processes_.end() && correlation >= 0 && correlation <= UINT32_MAX) {
      const auto process = static_cast<std::uint32_t>(it - processes_.begin());
      const auto c = static_cast<std::uint32_t>(correlation);
      const auto row =
          std::lower_bound(rows_.begin(), rows_.end(), std::pair{process, c},
                           [](const Row& r, const std::pair<std::uint32_t, std::uint32_t>& k) {
                             return std::pair{r.packed >> 24 & 0x7F, r.correlation} < k;
                           });
      if (row == rows_.end() || (row->packed >> 24 & 0x7F) != process || row->correlation != c) {
        return false;
      }
      out = {row->start, (key << 24) | static_cast<std::int64_t>(row->packed & 0xFFFFFF)};
      return true;
    }
    const auto w = wide_.find({key, correlation});
    if (w == wide_.end()) return false;
    out = {w->second.start, w->second.thread};
    return true;
  }

 private:
  struct Row {
    std::int64_t start;
    std::uint32_t correlation;
    std::uint32_t packed;  // tid's low 24 bits | process << 24 | other class << 31
  };
  static_assert(sizeof(Row) == 16);
  struct Wide {
    std::int64_t start = 0;
    std::int64_t thread = 0;
    bool other_class = false;
  };
  int index_of(std::int64_t key) {
    const auto it = std::find(processes_.begin(), processes_.end(), key);
    if (it != processes_.end()) return static_cast<int>(it - processes_.begin());
    if (processes_.size() >= 127) return -1;
    processes_.push_back(key);
    return static_cast<int>(processes_.size() - 1);
  }
  std::vector<Row> rows_;
  std::vector<std::int64_t> processes_;
  std::map<std::pair<std::int64_t, std::int64_t>, Wide> wide_;
};

/// One export being read: the database, its tables and what each part of
/// the reading leaves for the next; read_nsys_export runs the parts in
/// order. Its members keep the names the parts read them by.
struct NsysExportReading {
  NsysExportReading(const std::string& path_in, const RE2& step_range_in,
                    const JobPattern* pattern_in)
      : path(path_in),
        step_range(step_range_in),
        pattern(pattern_in),
        db(SqliteFile::open(path_in)),
        tables{db.tables()} {
    ex.path = path;
  }

  /// Refuses a database that is no export; reads its schema version.
  void check_tables() {
    const auto* meta = tables.find("META_DATA_EXPORT");
    if (meta == nullptr) meta = tables.find("EXPORT_META_DATA");
    std::vector<std::string> missing;
    for (const char* t : {"StringIds", "TARGET_INFO_SESSION_START_TIME"}) {
      if (tables.find(t) == nullptr) missing.emplace_back(t);
    }
    if (meta == nullptr) missing.emplace_back("META_DATA_EXPORT (or EXPORT_META_DATA)");
    if (!missing.empty()) {
      std::string list;
      for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
      throw InputError(fmt::format(
          "{}: an SQLite database that is no Nsight Systems export (lacks {}); export a report "
          "with `nsys export --type sqlite --include-blobs=true REPORT.nsys-rep`",
          path, list));
    }
    {
      SqliteQuery q = db.query(fmt::format("SELECT name, value FROM {}", sql_name(meta->name)));
      while (q.next()) {
        if (q.bytes(0) == std::string_view("EXPORT_SCHEMA_VERSION") && q.bytes(1)) {
          ex.schema_version = std::string(*q.bytes(1));
        }
      }
    }
  }

  /// The session's clock: utcEpochNs, and systemClockNs where stored.
  void read_session_clock() {
    const auto* session = tables.find("TARGET_INFO_SESSION_START_TIME");
    const bool has_system_clock = session->has("systemClockNs");
    {
      SqliteQuery q =
          db.query(std::string("SELECT utcEpochNs") + (has_system_clock ? ", systemClockNs" : "") +
                   " FROM TARGET_INFO_SESSION_START_TIME");
      const bool row = session->has("utcEpochNs") && q.next();
      if (!row || !q.integer(0)) {
        throw InputError(
            fmt::format("{}: TARGET_INFO_SESSION_START_TIME holds no utcEpochNs", path));
      }
      utc = *q.integer(0);
      if (has_system_clock) system_clock = q.integer(1).value_or(0);
    }
  }

  /// utcEpochNs + t − systemClockNs, in integers; a time beyond int64 is damage.
  std::int64_t when(std::int64_t t) const {
    std::int64_t out = 0;
    if (__builtin_add_overflow(utc, t, &out) || __builtin_sub_overflow(out, system_clock, &out)) {
      throw InputError(fmt::format("{}: a time of {} ns is beyond what a time can be", path, t));
    }
    return out;
  }

  /// The process of a globalPid >> 24, made on first sight.
  NsysProcess& process(std::int64_t key) {
    auto [it, fresh] = processes.try_emplace(key);
    if (fresh) {
      it->second.key = key;
      it->second.pid = static_cast<int>(key & 0xFFFFFF);
      it->second.jobs = std::make_unique<AnnotationJobs>(pattern);
    }
    return it->second;
  }

  /// Hosts and the environment.
  void read_hosts_and_environment() {
    std::optional<std::string> device_env;
    if (const auto* t = tables.find("TARGET_INFO_SYSTEM_ENV");
        t && t->has("globalVid") && t->has("name") && t->has("value")) {
      SqliteQuery q = db.query("SELECT globalVid, name, value FROM TARGET_INFO_SYSTEM_ENV");
      while (q.next()) {
        const auto name = q.bytes(1), value = q.bytes(2);
        if (!name || !value) continue;
        if (*name == "Hostname" && !value->empty() && q.integer(0)) {
          hosts.try_emplace(*q.integer(0), *value);
        } else if (*name == "DeviceEnvironment" && !value->empty() && !device_env) {
          device_env = std::string(*value);
        }
      }
    }
    if (const auto* t = tables.find("META_DATA_CAPTURE"); t && t->has("name") && t->has("value")) {
      static const RE2 process_env("PROCESS_[0-9]+:ENVIRONMENT_VARIABLE");
      std::vector<std::string> items;
      SqliteQuery q = db.query("SELECT name, value FROM META_DATA_CAPTURE");
      while (q.next()) {
        const auto name = q.bytes(0), value = q.bytes(1);
        if (name && value && !value->empty() &&
            RE2::FullMatch(re2::StringPiece(name->data(), name->size()), process_env)) {
          items.emplace_back(*value);
        }
      }
      add_env_pairs(items, env);
    }
    if (env.empty() && device_env) add_env_pairs(split_device_environment(*device_env), env);
    {
      std::set<std::string> names;
      for (const auto& [vid, host] : hosts) names.insert(host);
      ex.hosts.assign(names.begin(), names.end());
    }
  }

  /// NVTX: steps first (the activities are placed in them as they are read),
  /// then NCCL's calls and their payloads.
  void read_nvtx() {
    if (const auto* t = tables.find("NVTX_EVENTS");
        t && t->has("start") && t->has("end") && t->has("eventType") && t->has("globalTid")) {
      const auto schemas = read_schemas(db, tables);
      const bool has_text = t->has("text"), has_text_id = t->has("textId");
      const bool has_domain = t->has("domainId"), has_blob = t->has("binaryData");
      std::set<std::int64_t> nccl_domains;
      if (has_domain && has_text) {
        SqliteQuery q = db.query(fmt::format(
            "SELECT domainId, text FROM NVTX_EVENTS WHERE eventType = {}", kDomainCreate));
        while (q.next()) {
          if (q.integer(0) && q.bytes(1) == std::string_view("NCCL"))
            nccl_domains.insert(*q.integer(0));
        }
      }
      const bool named = !nccl_domains.empty();
      std::string sql = "SELECT e.rowid, e.start, e.end, ";
      sql += has_text ? "e.text, " : "NULL, ";
      sql += has_text_id ? "s.value, " : "NULL, ";
      sql += "e.globalTid, ";
      sql += has_domain ? "e.domainId, " : "NULL, ";
      sql += has_blob ? "e.binaryData" : "NULL";
      sql += " FROM NVTX_EVENTS AS e";
      if (has_text_id) sql += " LEFT JOIN StringIds AS s ON s.id = e.textId";
      sql +=
          fmt::format(" WHERE e.eventType IN ({}, {}) AND e.end IS NOT NULL", kPushPop, kStartEnd);
      SqliteQuery q = db.query(sql);
      const int step_group = step_range.NamedCapturingGroups().count("step")
                                 ? step_range.NamedCapturingGroups().at("step")
                                 : 1;
      std::vector<re2::StringPiece> groups(
          static_cast<std::size_t>(step_range.NumberOfCapturingGroups()) + 1);
      while (q.next()) {
        const auto row = q.integer(0), start = q.integer(1), end = q.integer(2), tid = q.integer(5);
        if (!row || !start || !end || !tid) continue;
        std::optional<std::string_view> name = q.bytes(3);
        if (!name) name = q.bytes(4);
        if (!name) continue;
        const std::int64_t key = *tid >> 24;
        const re2::StringPiece text(name->data(), name->size());
        if (step_range.Match(text, 0, text.size(), RE2::ANCHOR_BOTH, groups.data(),
                             static_cast<int>(groups.size()))) {
          const re2::StringPiece n = step_group < static_cast<int>(groups.size())
                                         ? groups[static_cast<std::size_t>(step_group)]
                                         : re2::StringPiece();
          std::int64_t step = 0;
          const bool digits = !n.empty() && std::all_of(n.begin(), n.end(), [](char c) {
            return c >= '0' && c <= '9';
          });
          if (digits) {
            const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), step);
            if (ec == std::errc{}) {
              NsysProcess& p = process(key);
              p.kernels->on_step_span(when(*start), when(*end), step);
              p.jobs->add_step({when(*start), when(*end), step});
            }
          }
          continue;
        }
        const auto dom = q.integer(6);
        const bool nccl_domain = named ? dom && nccl_domains.count(*dom) : dom && *dom != 0;
        if (!name->starts_with("nccl") || !nccl_domain) {
          // emit_nvtx names a record_function's range "PP:0F1, op_id = 12".
          std::string_view label = *name;
          if (pattern == nullptr && label.starts_with("PP:"))
            label = label.substr(0, label.find(", "));
          if (annotation_job_name(label, pattern)) {
            process(key).jobs->add_range({std::string(label), when(*start), when(*end), -1,
                                          static_cast<std::uint64_t>(*row),
                                          static_cast<std::uint64_t>(*row), *tid});
          }
          continue;
        }
        NsysNcclCall call{when(*start), when(*end), *row, std::string(*name), {}, {}, {}, {}};
        if (const auto blob = q.bytes(7)) decode_payload(*blob, *dom, call.name, schemas, call);
        NsysProcess& p = process(key);
        if (call.comm && call.nranks && call.rank) {
          p.members.push_back({*call.comm, *call.nranks, *call.rank});
        }
        p.calls[*tid].push_back(std::move(call));
      }
    }
  }

  /// The launches: for each (process, correlationId), the runtime or driver
  /// row first, then the earliest, then the first row.
  void read_launches() {
    if (const auto* t = tables.find("CUPTI_ACTIVITY_KIND_RUNTIME");
        t && t->has("start") && t->has("globalTid") && t->has("correlationId")) {
      {
        // Its rows at most (rowids count up from 1 unless rows were deleted):
        // the table is held at its size, never at a doubled capacity.
        SqliteQuery q = db.query("SELECT max(rowid) FROM CUPTI_ACTIVITY_KIND_RUNTIME");
        if (q.next()) {
          if (const auto rows = q.integer(0);
              rows && *rows > 0 && *rows < (std::int64_t{1} << 32)) {
            launches.reserve(static_cast<std::size_t>(*rows));
          }
        }
      }
      SqliteQuery q =
          db.query(std::string("SELECT start, ") + (t->has("eventClass") ? "eventClass" : "NULL") +
                   ", globalTid, correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME");
      while (q.next()) {
        const auto start = q.integer(0), tid = q.integer(2), corr = q.integer(3);
        if (!start || !tid || !corr) continue;
        const auto cls = q.integer(1);
        launches.add(*start, *tid, *corr, !(cls && (*cls == 0 || *cls == 1)));
      }
    }
    launches.finish();
  }

  /// The NCCL kernels' names: the strings that begin `nccl`.
  void read_nccl_names() {
    {
      SqliteQuery q =
          db.query("SELECT id, value FROM StringIds WHERE substr(value, 1, 4) = 'nccl'");
      while (q.next()) {
        if (q.integer(0) && q.bytes(1) && q.bytes(1)->starts_with("nccl")) {
          nccl_names.emplace(*q.integer(0), std::string(*q.bytes(1)));
        }
      }
    }
  }

  /// The GPU activities.
  void read_activities() {
    std::map<std::int64_t, PairList> pairs;
    for (std::size_t ti = 0; ti < std::size(kActivityTables); ++ti) {
      const auto* t = tables.find(kActivityTables[ti]);
      if (!t || !t->has("start") || !t->has("end") || !t->has("globalPid")) continue;
      const char* name_col = ti != 0                   ? nullptr
                             : t->has("demangledName") ? "demangledName"
                             : t->has("shortName")     ? "shortName"
                                                       : nullptr;
      SqliteQuery q =
          db.query(fmt::format("SELECT rowid, start, end, {}, {}, globalPid, {} FROM {}",
                               t->has("deviceId") ? "deviceId" : "NULL",
                               t->has("correlationId") ? "correlationId" : "NULL",
                               name_col ? name_col : "NULL", kActivityTables[ti]));
      while (q.next()) {
        const auto row = q.integer(0), start = q.integer(1), end = q.integer(2),
                   gpid = q.integer(5);
        if (!row || !start || !end || !gpid) continue;
        const std::int64_t key = *gpid >> 24;
        NsysProcess& p = process(key);
        ++p.activities;
        if (const auto device = q.integer(3)) ++device_counts[key][*device];
        const auto corr = q.integer(4);
        LaunchTable::Found launch;
        const bool launched = corr && launches.find(key, *corr, launch);
        const std::int64_t s = when(*start), e = when(*end);
        std::int64_t launched_at = 0;
        if (launched) {
          launched_at = when(launch.start);
          p.earliest_launch = std::min(p.earliest_launch, launched_at);
        }
        const std::string* comm_name = nullptr;
        if (name_col) {
          if (const auto id = q.integer(6)) {
            const auto it = nccl_names.find(*id);
            if (it != nccl_names.end()) comm_name = &it->second;
          }
        }
        if (comm_name) {
          p.comm.push_back(
              {s, e, *row, launched, launched_at, launched ? launch.thread : -1, *comm_name});
          continue;
        }
        p.kernels->on_compute(s, e, -1, launched);
        if (launched) {
          PairList& list = pairs[key];
          list.push_back({launched_at, s, e, launch.thread});
          if (list.size() >= 4096) {  // placed in their steps as they come: memory stays small
            p.kernels->place(list);
            p.jobs->place(list);
            list.clear();
          }
        }
      }
    }
    for (auto& [key, list] : pairs) {
      processes[key].kernels->place(list);
      processes[key].jobs->place(list);
    }
  }

  /// Devices: the deviceId most activities ran on, and its CUDA ordinal.
  /// Then each process's host, and its rank from the environment when the
  /// export holds one process.
  void place_processes() {
    std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> cuda_of;  // (pid, gpuId)
    if (const auto* t = tables.find("TARGET_INFO_CUDA_DEVICE");
        t && t->has("gpuId") && t->has("cudaId") && t->has("pid")) {
      SqliteQuery q = db.query("SELECT gpuId, cudaId, pid FROM TARGET_INFO_CUDA_DEVICE");
      while (q.next()) {
        if (q.integer(0) && q.integer(1) && q.integer(2)) {
          cuda_of.try_emplace({*q.integer(2), *q.integer(0)}, *q.integer(1));
        }
      }
    }
    std::map<std::int64_t, std::int64_t> gpu_cuda;
    if (const auto* t = tables.find("TARGET_INFO_GPU"); t && t->has("id") && t->has("cuDevice")) {
      SqliteQuery q = db.query("SELECT id, cuDevice FROM TARGET_INFO_GPU");
      while (q.next()) {
        if (q.integer(0) && q.integer(1)) gpu_cuda.try_emplace(*q.integer(0), *q.integer(1));
      }
    }
    const std::string folder =
        std::filesystem::absolute(std::filesystem::path(path)).parent_path().filename().string();
    for (auto& [key, p] : processes) {
      if (p.activities == 0) continue;
      std::uint64_t top = 0;
      for (const auto& [id, n] : device_counts[key]) {
        if (n > top) {
          top = n;
          p.device_id = id;
        }
      }
      if (p.device_id >= 0 || top > 0) {
        std::int64_t cuda = p.device_id;
        if (const auto it = cuda_of.find({p.pid, p.device_id}); it != cuda_of.end()) {
          cuda = it->second;
        } else if (cuda_of.empty()) {
          if (const auto g = gpu_cuda.find(p.device_id); g != gpu_cuda.end()) cuda = g->second;
        }
        p.cuda_device = cuda >= 0 && cuda < (1 << 20) ? static_cast<int>(cuda) : -1;
      }
      const std::int64_t vid = (key >> 24) << 48;
      if (const auto h = hosts.find(vid); h != hosts.end()) {
        p.host = h->second;
      } else if (ex.hosts.size() == 1 && hosts.size() == 1) {
        p.host = hosts.begin()->second;
      } else {
        p.host = folder;
      }
      ex.processes.push_back(std::move(p));
    }
    if (ex.processes.size() == 1) {
      ex.processes.front().env_rank = env_int(env, {"RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK"});
      ex.processes.front().world_size =
          env_int(env, {"WORLD_SIZE", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"});
    }
  }

  const std::string& path;
  const RE2& step_range;
  const JobPattern* pattern;
  const SqliteFile db;
  Tables tables;
  NsysExport ex;
  std::int64_t utc = 0, system_clock = 0;
  std::map<std::int64_t, std::string> hosts;  // globalVid -> Hostname
  std::map<std::string, std::string> env;
  std::map<std::int64_t, NsysProcess> processes;
  LaunchTable launches;
  std::unordered_map<std::int64_t, std::string> nccl_names;
  std::map<std::int64_t, std::map<std::int64_t, std::uint64_t>> device_counts;  // key -> id -> n
};

}  // namespace

bool sqlite_header(std::string_view first_bytes) { return first_bytes.starts_with(kSqliteMagic); }

NsysExport read_nsys_export(const std::string& path, const RE2& step_range,
                            const JobPattern* pattern) {
  NsysExportReading reading(path, step_range, pattern);
  reading.check_tables();
  reading.read_session_clock();
  reading.read_hosts_and_environment();
  reading.read_nvtx();
  reading.read_launches();
  reading.read_nccl_names();
  reading.read_activities();
  reading.place_processes();
  return std::move(reading.ex);
}

int nsys_gpu_processes(const std::string& path) {
  try {
    const SqliteFile db = SqliteFile::open(path);
    const std::vector<SqliteFile::Table> tables = db.tables();
    // The processes of the CUDA streams (a small table: a few rows a
    // process), which are those with GPU activities in practice; the reader
    // numbers the devices by the processes it reads (nsys_reader.h).
    for (const SqliteFile::Table& t : tables) {
      if (t.name != "TARGET_INFO_CUDA_STREAM" || !t.has("processId")) continue;
      SqliteQuery q = db.query(fmt::format(
          "SELECT count(*) FROM (SELECT DISTINCT {}processId FROM TARGET_INFO_CUDA_STREAM)",
          t.has("vmId") ? "vmId, " : ""));
      if (q.next()) {
        if (const auto n = q.integer(0); n && *n > 0 && *n < (1 << 20)) {
          return static_cast<int>(*n);
        }
      }
    }
    // Without that table: the processes with an activity, by a scan.
    std::unordered_set<std::int64_t> keys;
    for (const SqliteFile::Table& t : tables) {
      if (std::find(std::begin(kActivityTables), std::end(kActivityTables), t.name) ==
              std::end(kActivityTables) ||
          !t.has("globalPid") || !t.has("start") || !t.has("end")) {
        continue;
      }
      SqliteQuery q = db.query(
          fmt::format("SELECT DISTINCT globalPid >> 24 FROM {} WHERE typeof(start) = 'integer' AND "
                      "typeof(end) = 'integer' AND globalPid IS NOT NULL",
                      t.name));
      while (q.next()) {
        if (const auto k = q.integer(0)) keys.insert(*k);
      }
    }
    return static_cast<int>(keys.size());
  } catch (const InputError&) {
    return 0;
  }
}

}  // namespace pipescope
