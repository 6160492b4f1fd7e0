// printable(): quoting outside text in messages, control characters escaped, UTF-8 kept.
#include "reports/printable.h"

#include <gtest/gtest.h>

namespace cuvil::reports {
namespace {

TEST(Printable, PlainTextIsKept) {
  EXPECT_EQ(printable("resnet50/b1: a \"name\" \\ 100%"), "resnet50/b1: a \"name\" \\ 100%");
  EXPECT_EQ(printable(""), "");
}

TEST(Printable, ControlCharactersAndDeleteBecomeHexEscapes) {
  EXPECT_EQ(printable("x\x1b[31mred\x1b[0m"), "x\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("two\nlines\r\tand\x7f"), "two\\x0alines\\x0d\\x09and\\x7f");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
}

TEST(Printable, Utf8IsKept) {
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\xa5"), "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x94\xa5");
}

TEST(Printable, C1ControlsAndBytesThatAreNotUtf8AreEscaped) {
  EXPECT_EQ(printable("a\xc2\x9b" "31m"), "a\\u009b31m");  // U+009B, CSI to some terminals
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc3"), "\\xc3");              // truncated sequence
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");     // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("\xc2\xa0"), "\xc2\xa0");       // U+00A0 is not a control
}

TEST(Printable, IsIdempotent) {
  for (const std::string s : {"x\x1b[1m\n", "\xc2\x85\xff", "plain", "caf\xc3\xa9\t"}) {
    EXPECT_EQ(printable(printable(s)), printable(s)) << s;
  }
}

}  // namespace
}  // namespace cuvil::reports
