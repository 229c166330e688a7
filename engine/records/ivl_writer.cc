#include "records/ivl_writer.h"
#include "io/file_descriptor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "records/crc32c.h"

namespace pipescope::ivl {

namespace {

void check_type_name(std::string_view name) {
  if (name.empty()) throw std::invalid_argument("a job type name must not be empty");
  if (name.size() > kMaxTypeNameBytes) {
    throw std::invalid_argument("job type name longer than " + std::to_string(kMaxTypeNameBytes) +
                                " bytes: " + std::string(name.substr(0, 64)) + "...");
  }
}

void append_bytes(std::vector<unsigned char>& out, const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  out.insert(out.end(), p, p + size);
}

template <typename T>
void append_le(std::vector<unsigned char>& out, T value) {
  unsigned char bytes[sizeof(T)];
  store_le(bytes, value);
  append_bytes(out, bytes, sizeof(T));
}

void append_name(std::vector<unsigned char>& out, std::string_view name) {
  append_le(out, static_cast<std::uint16_t>(name.size()));
  append_bytes(out, name.data(), name.size());
}

void pad8(std::vector<unsigned char>& out) {
  while (out.size() % 8 != 0) out.push_back(0);
}

void append_extension(std::vector<unsigned char>& out, Extension tag,
                      const std::vector<unsigned char>& payload) {
  append_le(out, static_cast<std::uint16_t>(tag));
  append_le(out, std::uint16_t{0});
  append_le(out, static_cast<std::uint32_t>(payload.size()));
  append_bytes(out, payload.data(), payload.size());
  pad8(out);
}

}  // namespace

std::vector<unsigned char> encode_header(const FileInfo& info) {
  std::vector<unsigned char> out(kFixedHeaderBytes, 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  store_le(&out[header::kMajor], kMajorVersion);
  store_le(&out[header::kMinor], kMinorVersion);
  store_le(&out[header::kByteOrder], kByteOrderMark);
  store_le(&out[header::kMachine], info.machine);
  store_le(&out[header::kRank], info.rank);
  store_le(&out[header::kAnchorRealtime], info.anchor_realtime_ns);
  store_le(&out[header::kAnchorSteady], info.anchor_steady_ns);
  store_le(&out[header::kFirstStep], info.first_step.value_or(0));
  store_le(&out[header::kFlags], info.first_step ? kFlagHasFirstStep : 0u);
  store_le(&out[header::kRecordBytes], static_cast<std::uint32_t>(kRecordBytes));

  auto text = [](std::string_view s) { return std::vector<unsigned char>(s.begin(), s.end()); };
  if (info.producer.size() > 4096 || info.machine_name.size() > 4096) {
    throw std::invalid_argument("producer and machine names must be at most 4096 bytes");
  }
  append_extension(out, Extension::producer, text(info.producer));
  append_extension(out, Extension::machine_name, text(info.machine_name));
  if (info.types.size() > kMaxTypes) throw std::invalid_argument("too many job types");
  std::vector<unsigned char> table;
  append_le(table, static_cast<std::uint32_t>(info.types.size()));
  for (const auto& name : info.types) {
    check_type_name(name);
    append_name(table, name);
  }
  append_extension(out, Extension::types, table);
  append_extension(out, Extension::end, {});
  if (out.size() > kMaxHeaderBytes) throw std::invalid_argument("header too large");
  store_le(&out[header::kHeaderBytes], static_cast<std::uint32_t>(out.size()));
  store_le(&out[header::kHeaderCrc], crc32c(out.data(), out.size()));  // computed with the field 0
  return out;
}

Writer::Writer(const std::string& path, const FileInfo& info, const WriterOptions& options)
    : path_(path), options_(options) {
  if (options_.records_per_block == 0 || options_.records_per_block > kMaxRecordsPerBlock) {
    throw std::invalid_argument("records_per_block must be in 1.." +
                                std::to_string(kMaxRecordsPerBlock));
  }
  const std::vector<unsigned char> header = encode_header(info);  // validates the names
  for (const auto& name : info.types) {
    // A duplicate keeps its slot so ids match the table; type_id() returns the first.
    type_ids_.try_emplace(name, static_cast<std::uint32_t>(types_.size()));
    types_.push_back(name);
  }
  types_written_ = types_.size();
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot create " + path);
  pending_.reserve(options_.records_per_block);
  write_all(header.data(), header.size());
}

Writer::~Writer() {
  if (fd_ < 0) return;
  try {
    flush();
  } catch (const std::exception&) {
    // Destructors must not throw; close() reports the failure instead.
  }
  ::close(fd_);
}

std::uint32_t Writer::type_id(std::string_view name) {
  const auto it = type_ids_.find(std::string(name));
  if (it != type_ids_.end()) return it->second;
  check_type_name(name);
  if (types_.size() >= kMaxTypes) throw std::invalid_argument("too many job types");
  const auto id = static_cast<std::uint32_t>(types_.size());
  types_.emplace_back(name);
  type_ids_.emplace(types_.back(), id);
  return id;
}

void Writer::append(const Record& record) {
  if (record.type >= types_.size()) {
    throw std::invalid_argument("record type id " + std::to_string(record.type) +
                                " is not in the type table");
  }
  pending_.push_back(record);
  if (pending_.size() >= options_.records_per_block) flush();
}

void Writer::add_block(BlockKind kind, std::uint32_t count, const unsigned char* payload,
                       std::size_t payload_bytes) {
  const std::size_t start = out_.size();
  out_.resize(start + kBlockHeaderBytes);
  unsigned char* h = &out_[start];
  std::memcpy(h, kBlockMagic, sizeof(kBlockMagic));
  store_le(h + block::kKind, static_cast<std::uint16_t>(kind));
  store_le(h + 6, std::uint16_t{0});
  store_le(h + block::kCount, count);
  store_le(h + block::kPayloadBytes, static_cast<std::uint32_t>(payload_bytes));
  store_le(h + block::kSequence, sequence_++);
  std::uint32_t crc = crc32c(h, block::kCrc);
  crc = crc32c_extend(crc, payload, payload_bytes);
  store_le(h + block::kCrc, crc);
  append_bytes(out_, payload, payload_bytes);
}

void Writer::flush() {
  if (fd_ < 0) throw std::logic_error("ivl::Writer used after close()");
  out_.clear();
  if (types_written_ < types_.size() && !pending_.empty()) {
    // New names go first, so every complete record block that uses them
    // follows their (complete) definition in the file.
    std::vector<unsigned char> names;
    std::size_t first = types_written_;
    while (first < types_.size()) {
      names.clear();
      std::size_t n = 0;
      while (first + n < types_.size() && names.size() < kMaxBlockPayloadBytes - 2048) {
        append_name(names, types_[first + n]);
        ++n;
      }
      pad8(names);  // keeps later blocks 8-byte aligned; readers ignore the padding
      add_block(BlockKind::types, static_cast<std::uint32_t>(n), names.data(), names.size());
      first += n;
    }
    types_written_ = types_.size();
  }
  if (!pending_.empty()) {
    std::vector<unsigned char> payload(pending_.size() * kRecordBytes);
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      encode_record(pending_[i], &payload[i * kRecordBytes]);
    }
    add_block(BlockKind::records, static_cast<std::uint32_t>(pending_.size()), payload.data(),
              payload.size());
  }
  if (!out_.empty()) write_all(out_.data(), out_.size());
  records_written_ += pending_.size();
  pending_.clear();
}

void Writer::close() {
  if (fd_ < 0) return;
  flush();
  const int fd = fd_;
  fd_ = -1;
  if (options_.sync_on_close && ::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    throw std::system_error(err, std::generic_category(), "cannot sync " + path_);
  }
  if (::close(fd) != 0)
    throw std::system_error(errno, std::generic_category(), "cannot close " + path_);
}

void Writer::write_all(const unsigned char* data, std::size_t size) {
  if (const int error = io::write_all(fd_, data, size); error != 0) {
    throw std::system_error(error, std::generic_category(), "cannot write " + path_);
  }
  bytes_written_ += size;
}

}  // namespace pipescope::ivl
