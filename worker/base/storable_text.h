// StorableText: a text made safe to store in a PostgreSQL `text` column and a jsonb string —
// valid UTF-8 with no NUL byte. Text from outside the node (curl's error buffer, which can
// echo a peer's bytes or a host name as typed) may hold either; one such text in a completion
// batch makes the whole statement fail (completion_writer.h), so it is cleaned where it becomes
// a recorded reason (FailureReason, verdict.h).
//
// A pure function; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace bulkhead {

// `text` with each byte that does not start a well-formed UTF-8 sequence (a stray continuation
// byte, an overlong form, a surrogate, a code point past U+10FFFF, a sequence cut short) and
// each NUL replaced by U+FFFD, one replacement per bad byte. Valid text comes back unchanged.
std::string StorableText(std::string_view text);

}  // namespace bulkhead
