#include "distributed/wire.h"

#include "ingest/input_formats.h"

namespace pipescope::distributed {

void put_input(ByteWriter& w, const InputFile& input) {
  w.str(input.path);
  w.put(static_cast<std::uint8_t>(input.format));
  w.put(input.size_bytes);
  w.put(static_cast<std::int32_t>(input.machine));
  w.str(input.machine_name);
  w.put(static_cast<std::int32_t>(input.rank));
  w.put(static_cast<std::int32_t>(input.device));
  w.put(static_cast<std::int32_t>(input.ranks));
}

InputFile get_input(ByteReader& r) {
  InputFile input;
  input.path = r.str();
  const auto format = r.get<std::uint8_t>();
  if (!is_input_format(format)) throw WireError("bad input format");
  input.format = static_cast<InputFormat>(format);
  input.size_bytes = r.get<std::uint64_t>();
  input.machine = r.get<std::int32_t>();
  input.machine_name = r.str();
  input.rank = r.get<std::int32_t>();
  input.device = r.get<std::int32_t>();
  input.ranks = r.get<std::int32_t>();
  if (input.ranks < 1) throw WireError("bad rank count");
  return input;
}

}  // namespace pipescope::distributed
