// StorableText: valid UTF-8 passes unchanged; every byte PostgreSQL would refuse in a text
// (or a jsonb string) becomes one U+FFFD.
#include "storable_text.h"

#include <gtest/gtest.h>

#include <string>

namespace bulkhead {
namespace {

TEST(StorableText, ValidTextComesBackUnchanged) {
  for (std::string text :
       {"", "Failed to connect to 127.0.0.1 port 9: Couldn't connect to server",
        "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80", "\x7F\xDF\xBF\xEF\xBF\xBF\xF4\x8F\xBF\xBF"}) {
    EXPECT_EQ(StorableText(text), text);
  }
}

TEST(StorableText, EachBadByteBecomesOneReplacementCharacter) {
  const struct {
    std::string in, out, why;
  } cases[] = {
      {"a\xFF\xFE"
       "b",
       "a\uFFFD\uFFFDb", "bytes that never start a sequence"},
      {std::string("a\0b", 3), "a\uFFFDb", "NUL: PostgreSQL text cannot hold it"},
      {"\x80x", "\uFFFDx", "a stray continuation byte"},
      {"\xC0\xAF", "\uFFFD\uFFFD", "an overlong '/'"},
      {"\xE0\x80\xAF", "\uFFFD\uFFFD\uFFFD", "an overlong three-byte form"},
      {"\xED\xA0\x80", "\uFFFD\uFFFD\uFFFD", "a surrogate"},
      {"\xF4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD", "past U+10FFFF"},
      {"ok \xE2\x82", "ok \uFFFD\uFFFD", "a sequence cut short at the end"},
      {"\xE2\x82"
       "A",
       "\uFFFD\uFFFDA", "a sequence cut short by ASCII"},
  };
  for (const auto& c : cases) EXPECT_EQ(StorableText(c.in), c.out) << c.why;
}

}  // namespace
}  // namespace bulkhead
