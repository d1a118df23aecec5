// The JSON writer's three layouts, numbers and escapes, against hand-written text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ember/JsonWriter.h"

namespace ember {
namespace {

using Layout = JsonWriter::Layout;

TEST(JsonWriter, PrettyPrintsNestedContainersWithTwoSpaceIndents) {
  JsonWriter json;
  json.beginObject().key("a").value(1).key("list").beginArray().value("x").value(true).null().endArray();
  json.key("empty").beginObject().endObject().key("none").beginArray().endArray().endObject();
  EXPECT_EQ(json.str(),
            "{\n  \"a\": 1,\n  \"list\": [\n    \"x\",\n    true,\n    null\n  ],\n  \"empty\": {},\n"
            "  \"none\": []\n}\n");
}

TEST(JsonWriter, InlineContainersStayOnOneLineInsideAPrettyOne) {
  JsonWriter json;
  json.beginObject().key("units").beginObject();
  json.key("dma").beginObject(Layout::Inline).key("busy").value(uint64_t(3));
  json.key("stalls").beginObject(Layout::Inline).key("token").value(0).endObject().endObject();
  json.endObject().endObject();
  EXPECT_EQ(json.str(),
            "{\n  \"units\": {\n    \"dma\": {\"busy\": 3, \"stalls\": {\"token\": 0}}\n  }\n}\n");
}

TEST(JsonWriter, LinesPutsOneElementALineWithoutIndent) {
  JsonWriter json;
  json.beginObject(Layout::Inline).key("events").beginArray(Layout::Lines);
  json.beginObject(Layout::Inline).key("n").value(1).endObject();
  json.beginObject(Layout::Inline).key("n").value(2).endObject();
  json.endArray().endObject();
  EXPECT_EQ(json.str(), "{\"events\": [\n{\"n\": 1},\n{\"n\": 2}\n]}\n");
}

TEST(JsonWriter, DoublesUseTheChosenSignificantDigitsAndNullForNonFinite) {
  JsonWriter ten, seventeen(17);
  ten.beginArray(Layout::Inline).value(0.1).value(1.0 / 3).value(std::nan("")).value(-INFINITY).endArray();
  seventeen.beginArray(Layout::Inline).value(0.1).value(1e300).endArray();
  EXPECT_EQ(ten.str(), "[0.1, 0.3333333333, null, null]\n");
  EXPECT_EQ(seventeen.str(), "[0.10000000000000001, 1.0000000000000001e+300]\n");
}

TEST(JsonWriter, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(JsonWriter::escape("a\"b\\c\n\r\t\x01 \xc3\xa9"), "\"a\\\"b\\\\c\\n\\r\\t\\u0001 \xc3\xa9\"");
}

TEST(JsonWriter, BytesThatAreNotUtf8BecomeReplacementCharacters) {
  // A lone continuation byte, a truncated sequence before a quote, an overlong
  // '/' and a byte that never occurs in UTF-8; well-formed text around them kept.
  EXPECT_EQ(JsonWriter::escape("a\x80"
                               "b\xc3\"\xc0\xaf\xff\xe2\x82\xac"),
            "\"a\xef\xbf\xbd"
            "b\xef\xbf\xbd\\\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xe2\x82\xac\"");
  JsonWriter json;
  json.beginObject(JsonWriter::Layout::Inline).key("path\xfe").value("dir/\x81.onnx").endObject();
  EXPECT_EQ(json.str(), "{\"path\xef\xbf\xbd\": \"dir/\xef\xbf\xbd.onnx\"}\n");
}

}  // namespace
}  // namespace ember
