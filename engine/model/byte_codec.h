// The byte encoding of values that travel between the ranks of a
// partitioned run (distributed/wire.h) and of the figures' parts
// (export/figure_registry.h). Every rank runs the same pipescope binary on the
// same kind of machine, so integers and trivially copyable records travel in
// the machine's own byte order and layout; strings as a 32-bit length and the
// bytes; lists as a 64-bit count and the elements' bytes. A reader that
// meets a message that ends early throws WireError (model/errors.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <type_traits>

#include "model/errors.h"

namespace pipescope {

class ByteWriter {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&value, sizeof value);
  }
  void str(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    bytes(s.data(), s.size());
  }
  void bytes(const void* data, std::size_t n) { out_.append(static_cast<const char*>(data), n); }
  /// A count, then the elements' bytes.
  template <typename Range>
  void list(const Range& items) {
    using T = std::decay_t<decltype(*std::begin(items))>;
    static_assert(std::is_trivially_copyable_v<T>);
    put(static_cast<std::uint64_t>(std::size(items)));
    if (std::size(items) > 0) bytes(&*std::begin(items), std::size(items) * sizeof(T));
  }

  std::size_t size() const { return out_.size(); }
  std::string& data() { return out_; }
  /// The bytes written; the writer is empty again.
  std::string take() {
    std::string out = std::move(out_);
    out_.clear();
    return out;
  }
  void clear() { out_.clear(); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, bytes(sizeof value), sizeof value);
    return value;
  }
  std::string str() {
    const auto n = get<std::uint32_t>();
    return std::string(bytes(n), n);
  }
  /// What ByteWriter::list wrote, into any vector of T.
  template <typename Vector>
  void list(Vector& items) {
    using T = typename Vector::value_type;
    static_assert(std::is_trivially_copyable_v<T>);
    const auto n = get<std::uint64_t>();
    if (n > left() / (sizeof(T) == 0 ? 1 : sizeof(T))) throw WireError("list longer than message");
    items.resize(n);
    if (n > 0) std::memcpy(items.data(), bytes(n * sizeof(T)), n * sizeof(T));
  }
  const char* bytes(std::size_t n) {
    if (n > in_.size() - pos_) throw WireError("message ends early");
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  bool done() const { return pos_ == in_.size(); }
  std::size_t left() const { return in_.size() - pos_; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace pipescope
