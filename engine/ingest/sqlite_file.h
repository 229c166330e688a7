// An SQLite database file opened for reading only, as the Nsight Systems
// reader reads an export (nsys_reader.h): through SQLite itself, read-only
// and immutable (URI `file:PATH?immutable=1`), so that the user's file is
// never written, locked or given a journal, and a database of another
// program is never changed by looking at it.
//
// A SqliteFile and its queries are used by one thread at a time (the
// connection is opened without SQLite's own mutex).
//
// Errors are the set-up tier (STYLE: fatal, one clear line): a file that is
// no database, or that is damaged where a query reads it, throws InputError
// naming the path and SQLite's reason; nothing else is thrown.
//
//   SqliteFile db = SqliteFile::open(path);
//   SqliteQuery q = db.query("SELECT id, value FROM StringIds");
//   while (q.next()) use(q.integer(0), q.text(1));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace pipescope {

/// One running query; move-only. Columns are read from the current row.
class SqliteQuery {
 public:
  SqliteQuery(SqliteQuery&& other) noexcept;
  SqliteQuery& operator=(SqliteQuery&&) = delete;
  SqliteQuery(const SqliteQuery&) = delete;
  ~SqliteQuery();

  /// Steps to the next row; false at the end. InputError when the database
  /// is damaged where the row lies.
  bool next();
  /// The column's value when it is stored as an integer (never a real or
  /// text read as one); nullopt otherwise (NULL included).
  std::optional<std::int64_t> integer(int column) const;
  /// The column's bytes (text or blob, as stored); nullopt for NULL and
  /// numbers. Valid until the next step.
  std::optional<std::string_view> bytes(int column) const;

 private:
  friend class SqliteFile;
  SqliteQuery(sqlite3_stmt* statement, const std::string* path);
  sqlite3_stmt* statement_;
  const std::string* path_;
};

class SqliteFile {
 public:
  /// Opens `path` read-only and immutable. Throws InputError when it cannot
  /// be opened or is no SQLite database.
  static SqliteFile open(const std::string& path);
  SqliteFile(SqliteFile&& other) noexcept;
  SqliteFile& operator=(SqliteFile&&) = delete;
  SqliteFile(const SqliteFile&) = delete;
  ~SqliteFile();

  /// A query over the database (the file must outlive it). InputError when
  /// SQLite cannot prepare it (a damaged schema).
  SqliteQuery query(const std::string& sql) const;
  /// The tables, and each one's columns in order.
  struct Table {
    std::string name;
    std::vector<std::string> columns;
    bool has(std::string_view column) const;
  };
  std::vector<Table> tables() const;

  const std::string& path() const { return path_; }

 private:
  SqliteFile(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::string path_;
};

/// The `file:` URI of `path` (absolute, with `%`, `?` and `#` escaped) with
/// `immutable=1`: SQLite then takes no lock and reads no journal.
std::string sqlite_immutable_uri(const std::string& path);

}  // namespace pipescope
