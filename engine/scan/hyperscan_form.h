// The form of an RE2 expression that Hyperscan must compile to report every
// line RE2 matches: the two engines read a few constructs differently on
// bytes (RE2 in Latin-1, Hyperscan without UTF-8), so those are rewritten to
// RE2's meaning or widened. Whoever uses it confirms each reported line with
// RE2 (Hyperscan finds candidates, RE2 decides).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace pipescope {

/// The expression as Hyperscan must read it to find every line RE2 matches
/// (a superset: a construct Hyperscan reads more narrowly than RE2 is
/// rewritten to RE2's meaning, or widened); nullopt where that cannot be
/// done, and RE2 then reads every line. Where the two differ on a line of
/// bytes (RE2 in Latin-1, Hyperscan without UTF-8):
///  - `\S` excludes \v for Hyperscan (PCRE's \s holds it), not for RE2:
///    `[\S\x0b]`, or `\S\x0b` in a class; in a negated class Hyperscan's
///    is already the wider. `\s` in a negated class is spelt out as RE2's
///    set; elsewhere Hyperscan's is the wider.
///  - `\v` is vertical whitespace for Hyperscan, the vertical tab for RE2.
///  - `\A` and `\z` are the line's edges for RE2 (it reads one line), the
///    block's for Hyperscan: `^` and `$`, which multi-line mode puts at the
///    lines' edges.
///  - Caseless matching folds Latin-1 letters (é, É) for RE2, ASCII only
///    for Hyperscan; and `\p{..}` classes are Unicode's for RE2: not
///    rewritten.
/// `\Q...\E` is copied as it is.
std::optional<std::string> hyperscan_form(std::string_view re);

}  // namespace pipescope
