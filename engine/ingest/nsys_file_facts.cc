#include "ingest/nsys_file_facts.h"

#include <iterator>

#include "model/byte_codec.h"

namespace pipescope {

namespace {

template <typename T>
void put_facts_optional(ByteWriter& w, const std::optional<T>& value) {
  w.put(static_cast<std::uint8_t>(value.has_value()));
  w.put(value.value_or(T{}));
}

template <typename T>
std::optional<T> get_facts_optional(ByteReader& r) {
  const bool has = r.get<std::uint8_t>() != 0;
  const T value = r.get<T>();
  return has ? std::optional<T>(value) : std::nullopt;
}

/// A count the bytes left could hold, each item at least `least` bytes.
std::uint64_t nsys_facts_count(ByteReader& r, std::size_t least) {
  const auto n = r.get<std::uint64_t>();
  if (n > r.left() / least) throw WireError("Nsight facts: a count beyond the bytes left");
  return n;
}

void put_process(ByteWriter& w, const NsysProcessFacts& p) {
  w.put(static_cast<std::int32_t>(p.pid));
  w.str(p.host);
  w.put(static_cast<std::int32_t>(p.cuda_device));
  put_facts_optional(w, p.env_rank);
  put_facts_optional(w, p.world_size);
  w.put(static_cast<std::uint64_t>(p.members.size()));
  for (const auto& m : p.members) {
    w.put(m.comm);
    w.put(m.nranks);
    w.put(m.rank);
  }
  w.put(static_cast<std::uint64_t>(p.calls.size()));
  for (const NsysCallFacts& c : p.calls) {
    w.put(c.thread);
    w.put(c.start);
    w.put(c.end);
    w.put(c.call);
    put_facts_optional(w, c.comm);
    put_facts_optional(w, c.peer);
  }
  w.put(static_cast<std::uint64_t>(p.launches.size()));
  for (const auto& l : p.launches) {
    w.put(l.ts);
    w.put(l.thread);
  }
  w.put(static_cast<std::uint64_t>(p.diagnostics.size()));
  for (const Diagnostic& d : p.diagnostics) {
    w.str(d.path);
    w.put(d.line);
    w.str(d.message);
  }
}

NsysProcessFacts get_process(ByteReader& r) {
  NsysProcessFacts p;
  p.pid = r.get<std::int32_t>();
  p.host = r.str();
  p.cuda_device = r.get<std::int32_t>();
  p.env_rank = get_facts_optional<int>(r);
  p.world_size = get_facts_optional<int>(r);
  for (auto n = nsys_facts_count(r, 24); n > 0; --n) {
    NsysProcessFacts::Member m;
    m.comm = r.get<std::uint64_t>();
    m.nranks = r.get<std::int64_t>();
    m.rank = r.get<std::int64_t>();
    p.members.push_back(m);
  }
  const auto calls = nsys_facts_count(r, 43);
  p.calls.reserve(calls);
  for (auto n = calls; n > 0; --n) {
    NsysCallFacts c;
    c.thread = r.get<std::int64_t>();
    c.start = r.get<std::int64_t>();
    c.end = r.get<std::int64_t>();
    c.call = r.get<std::uint8_t>();
    if (c.call >= std::size(kNsysHostCalls)) throw WireError("Nsight facts: an unknown call");
    c.comm = get_facts_optional<std::uint64_t>(r);
    c.peer = get_facts_optional<std::int64_t>(r);
    p.calls.push_back(std::move(c));
  }
  const auto launches = nsys_facts_count(r, 16);
  p.launches.reserve(launches);
  for (auto n = launches; n > 0; --n) {
    NsysProcessFacts::Launch l;
    l.ts = r.get<std::int64_t>();
    l.thread = r.get<std::int64_t>();
    p.launches.push_back(l);
  }
  for (auto n = nsys_facts_count(r, 16); n > 0; --n) {
    Diagnostic d;
    d.path = r.str();
    d.line = r.get<std::uint64_t>();
    d.message = r.str();
    p.diagnostics.push_back(std::move(d));
  }
  return p;
}

}  // namespace

std::string encode_nsys_facts(const NsysFileFacts& facts) {
  ByteWriter w;
  w.put(static_cast<std::uint8_t>(facts.report));
  w.put(facts.host_timed);
  w.put(static_cast<std::uint64_t>(facts.processes.size()));
  for (const NsysProcessFacts& p : facts.processes) put_process(w, p);
  return w.take();
}

NsysFileFacts decode_nsys_facts(std::string_view bytes) {
  ByteReader r(bytes);
  NsysFileFacts facts;
  facts.report = r.get<std::uint8_t>() != 0;
  facts.host_timed = r.get<std::uint64_t>();
  for (auto n = nsys_facts_count(r, 8); n > 0; --n) facts.processes.push_back(get_process(r));
  if (!r.done()) throw WireError("Nsight facts: bytes after the last process");
  return facts;
}

}  // namespace pipescope
