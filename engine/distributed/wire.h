// The byte encoding of what ranks send each other: model/byte_codec.h's
// (integers and Job records, 40 bytes without padding, in the machine's own
// byte order and layout; strings as a 32-bit length and the bytes), and the
// inputs' descriptions. Pure: no MPI here.
#pragma once

#include "ingest/discovery.h"
#include "model/byte_codec.h"
#include "model/errors.h"

namespace pipescope::distributed {

/// A message that ends early or holds an impossible value (model/errors.h).
using pipescope::WireError;

/// The codec, one for the whole engine (model/byte_codec.h).
using pipescope::ByteReader;
using pipescope::ByteWriter;

void put_input(ByteWriter& w, const InputFile& input);
InputFile get_input(ByteReader& r);

}  // namespace pipescope::distributed
