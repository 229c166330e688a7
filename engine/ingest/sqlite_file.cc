#include "ingest/sqlite_file.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <filesystem>
#include <utility>

#include "model/errors.h"

namespace pipescope {

std::string sqlite_immutable_uri(const std::string& path) {
  std::error_code ec;
  std::string absolute = std::filesystem::absolute(path, ec).string();
  if (ec) absolute = path;
  std::string uri = "file:";
  for (const char c : absolute) {
    if (c == '%' || c == '?' || c == '#') {
      uri += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

SqliteFile SqliteFile::open(const std::string& path) {
  sqlite3* db = nullptr;
  // NOMUTEX: a connection is used by one thread at a time (one export per
  // reader thread), so SQLite need not lock it around every column read.
  const int rc =
      sqlite3_open_v2(sqlite_immutable_uri(path).c_str(), &db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw InputError(fmt::format("{}: cannot be opened as an SQLite database ({})", path, why));
  }
  // A damaged page must be an error, never a crash or a loop: SQLite checks
  // what it reads, and the reader only reads.
  sqlite3_extended_result_codes(db, 1);
  return SqliteFile(db, path);
}

SqliteFile::SqliteFile(SqliteFile&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)) {}

SqliteFile::~SqliteFile() { sqlite3_close(db_); }

SqliteQuery SqliteFile::query(const std::string& sql) const {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &statement, nullptr) !=
      SQLITE_OK) {
    sqlite3_finalize(statement);
    throw InputError(
        fmt::format("{}: an unreadable SQLite database ({})", path_, sqlite3_errmsg(db_)));
  }
  return SqliteQuery(statement, &path_);
}

bool SqliteFile::Table::has(std::string_view column) const {
  for (const std::string& c : columns) {
    if (c == column) return true;
  }
  return false;
}

std::vector<SqliteFile::Table> SqliteFile::tables() const {
  std::vector<Table> out;
  SqliteQuery names = query("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  while (names.next()) {
    if (const auto name = names.bytes(0)) out.push_back({std::string(*name), {}});
  }
  for (Table& t : out) {
    std::string quoted;
    for (const char c : t.name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    SqliteQuery columns = query(fmt::format("PRAGMA table_info(\"{}\")", quoted));
    while (columns.next()) {
      if (const auto name = columns.bytes(1)) t.columns.emplace_back(*name);
    }
  }
  return out;
}

SqliteQuery::SqliteQuery(sqlite3_stmt* statement, const std::string* path)
    : statement_(statement), path_(path) {}

SqliteQuery::SqliteQuery(SqliteQuery&& other) noexcept
    : statement_(std::exchange(other.statement_, nullptr)), path_(other.path_) {}

SqliteQuery::~SqliteQuery() { sqlite3_finalize(statement_); }

bool SqliteQuery::next() {
  const int rc = sqlite3_step(statement_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw InputError(fmt::format("{}: a damaged SQLite database ({})", *path_,
                               sqlite3_errmsg(sqlite3_db_handle(statement_))));
}

std::optional<std::int64_t> SqliteQuery::integer(int column) const {
  if (sqlite3_column_type(statement_, column) != SQLITE_INTEGER) return std::nullopt;
  return static_cast<std::int64_t>(sqlite3_column_int64(statement_, column));
}

std::optional<std::string_view> SqliteQuery::bytes(int column) const {
  const int type = sqlite3_column_type(statement_, column);
  if (type != SQLITE_TEXT && type != SQLITE_BLOB) return std::nullopt;
  const void* data = sqlite3_column_blob(statement_, column);
  const int size = sqlite3_column_bytes(statement_, column);
  if (data == nullptr || size <= 0) return std::string_view();
  return std::string_view(static_cast<const char*>(data), static_cast<std::size_t>(size));
}

}  // namespace pipescope
