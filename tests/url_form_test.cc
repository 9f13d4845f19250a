// url_form: query strings and form bodies as the console reads them.
#include "url_form.h"

#include <gtest/gtest.h>

namespace bulkhead::console {
namespace {

TEST(UrlForm, DecodesPairsPlusesAndPercentEscapes) {
  const std::optional<Form> form = ParseForm("q=a+b%2Fc&state=discarded&&empty=&flag");
  ASSERT_TRUE(form);
  EXPECT_EQ(form->at("q"), "a b/c");
  EXPECT_EQ(form->at("state"), "discarded");
  EXPECT_EQ(form->at("empty"), "");
  EXPECT_EQ(form->at("flag"), "");
  EXPECT_EQ(form->size(), 4u);
}

TEST(UrlForm, ALaterValueWins) { EXPECT_EQ(ParseForm("a=1&a=2")->at("a"), "2"); }

TEST(UrlForm, RefusesABrokenEscape) {
  EXPECT_FALSE(ParseForm("q=%zz"));
  EXPECT_FALSE(ParseForm("q=%4"));
  EXPECT_FALSE(ParseForm("q=%"));
  EXPECT_FALSE(UrlDecode("50%"));
  EXPECT_EQ(UrlDecode("%41%62"), "Ab");
}

}  // namespace
}  // namespace bulkhead::console
