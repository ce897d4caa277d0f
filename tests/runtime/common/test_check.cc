#include "ethosu_rt/check.h"

#include "log_capture.h"
#include "test_api.h"

namespace {

using ethosu_rt::Error;
using test_support::LogCapture;

Error less_than(size_t got, size_t limit) {
  ETHOSU_RT_CHECK(got, <, limit, Error::kTruncated, "block 5 'inputs' at offset 96",
                  "payload bytes");
  return Error::kOk;
}

Error equal_signed(int32_t got) {
  ETHOSU_RT_CHECK(got, ==, 1, Error::kBadValue, "input 0", "dimension");
  return Error::kOk;
}

Error magic(uint32_t got) {
  ETHOSU_RT_CHECK_HEX(got, ==, 0x31504F43u, Error::kBadMagic, nullptr, "FourCC");
  return Error::kOk;
}

Error one_of(int32_t got) {
  ETHOSU_RT_CHECK_ONE_OF(got == 1 || got == 3, got, Error::kBadValue, "input 2", "region",
                         "1 or 3");
  return Error::kOk;
}

Error texts() {
  ETHOSU_RT_FAIL_TEXT(Error::kBadMagic, "block 1 at offset 0", "block name", "'cmd_data'",
                      "'cmd_dat'");
}

// 64-bit values take the wide failure path on every target.
Error wide(uint64_t got) {
  ETHOSU_RT_CHECK(got, <=, uint64_t{1} << 40, Error::kOverflow, "wide", "bytes");
  return Error::kOk;
}

Error wide_signed(int64_t got) {
  ETHOSU_RT_CHECK(got, >=, int64_t{0}, Error::kBadValue, "wide", "offset");
  return Error::kOk;
}

int g_format_calls = 0;
void format_lazy(ethosu_rt::TextBuffer& out, const ethosu_rt::LazyWhere& where) {
  ++g_format_calls;
  out.add(static_cast<const char*>(where.context)).add(" ").add_u64(where.values[0]);
}

Error lazy_where(uint8_t got) {
  const ethosu_rt::LazyWhere where = {format_lazy, "entry", {7, 0, 0}};
  ETHOSU_RT_CHECK(got, !=, 0u, Error::kBadValue, where, "type");
  ETHOSU_RT_CHECK_ONE_OF(got == 1 || got == 2, got, Error::kUnsupported, where, "type", "1 or 2");
  return Error::kOk;
}

int g_lazy_calls = 0;
const char* lazy_where() {
  ++g_lazy_calls;
  return "lazy";
}

Error lazy(size_t got) {
  ETHOSU_RT_CHECK(got, ==, size_t{0}, Error::kBadValue, lazy_where(), "value");
  return Error::kOk;
}

TEST(Check, PassingChecksLogNothing) {
  LogCapture log;
  EXPECT_EQ(less_than(1, 2), Error::kOk);
  EXPECT_EQ(equal_signed(1), Error::kOk);
  EXPECT_EQ(log.count(), 0);
}

TEST(Check, FailureNamesFileLineWhereWhatAndValues) {
  LogCapture log;
  EXPECT_EQ(less_than(100, 64), Error::kTruncated);
  EXPECT_EQ(log.count(), 1);
  EXPECT_CONTAINS(log.last(), "test_check.cc:");  // the file name is kept in every mode
  EXPECT_LOG(log, ": block 5 'inputs' at offset 96: payload bytes must be < 64; got 100");
}

TEST(Check, SignedHexOneOfAndTextForms) {
  LogCapture log;
  EXPECT_EQ(equal_signed(-7), Error::kBadValue);
  EXPECT_LOG(log, "input 0: dimension must be 1; got -7");
  EXPECT_EQ(magic(0x32504F43u), Error::kBadMagic);
  EXPECT_LOG(log, ": FourCC must be 0x31504f43; got 0x32504f43");
  EXPECT_EQ(one_of(2), Error::kBadValue);
  EXPECT_LOG(log, "input 2: region must be 1 or 3; got 2");
  EXPECT_EQ(texts(), Error::kBadMagic);
  EXPECT_LOG(log, "block 1 at offset 0: block name must be 'cmd_data'; got 'cmd_dat'");
}

TEST(Check, WhereIsOnlyComposedWhenTheCheckFails) {
  g_lazy_calls = 0;
  EXPECT_EQ(lazy(0), Error::kOk);
  EXPECT_EQ(g_lazy_calls, 0);
  LogCapture log;
  EXPECT_EQ(lazy(1), Error::kBadValue);
  EXPECT_EQ(g_lazy_calls, ETHOSU_RT_CHECK_TEXT ? 1 : 0);
}

TEST(Check, WideAndNegativeValues) {
  LogCapture log;
  EXPECT_EQ(wide(uint64_t{1} << 40), Error::kOk);
  EXPECT_EQ(wide(UINT64_MAX), Error::kOverflow);
  EXPECT_CONTAINS(log.last(), "must be <= 1099511627776; got 18446744073709551615");
  EXPECT_EQ(wide_signed(INT64_MIN), Error::kBadValue);
  EXPECT_CONTAINS(log.last(), "must be >= 0; got -9223372036854775808");
  EXPECT_EQ(equal_signed(-7), Error::kBadValue);
  EXPECT_CONTAINS(log.last(), "must be 1; got -7");  // a 32-bit signed value, sign-extended
}

TEST(Check, LazyWhereIsFormattedOnlyOnFailure) {
  g_format_calls = 0;
  LogCapture log;
  EXPECT_EQ(lazy_where(1), Error::kOk);
  EXPECT_EQ(g_format_calls, 0);
  EXPECT_EQ(lazy_where(0), Error::kBadValue);
  EXPECT_LOG(log, "entry 7: type must not be 0; got 0");
  EXPECT_EQ(lazy_where(3), Error::kUnsupported);
  EXPECT_LOG(log, "entry 7: type must be 1 or 2; got 3");
  EXPECT_EQ(g_format_calls, ETHOSU_RT_CHECK_TEXT ? 2 : 0);
#if !ETHOSU_RT_CHECK_TEXT
  // Without texts a one-of check still names file:line and the value.
  EXPECT_CONTAINS(log.last(), "test_check.cc:");
  EXPECT_CONTAINS(log.last(), ": value must be an allowed value; got 3");
#endif
}

TEST(Check, FormatTruncatesButReportsTheFullLength) {
  static const ethosu_rt::CheckSite site = {"f.cc", "what", "<=", 7, Error::kBadValue, 0};
  const ethosu_rt::CheckFailure failure = {&site, "where", 3, 9, nullptr, nullptr};
  char small[8];
  const size_t full = ethosu_rt::format_check(failure, small, sizeof(small));
  EXPECT_STREQ(small, "f.cc:7:");
  char large[64];
  EXPECT_EQ(ethosu_rt::format_check(failure, large, sizeof(large)), full);
  EXPECT_STREQ(large, "f.cc:7: where: what must be <= 3; got 9");
}

TEST(Check, TextBufferFormatsExtremes) {
  char text[64];
  ethosu_rt::TextBuffer buffer(text, sizeof(text));
  buffer.add_i64(INT64_MIN).add(" ").add_u64(UINT64_MAX, true).add(" ").add("abcdef", 3);
  EXPECT_STREQ(text, "-9223372036854775808 0xffffffffffffffff abc");
}

TEST(Check, EveryErrorHasAName) {
  for (int e = 0; e <= static_cast<int>(Error::kTimeout); ++e) {
    const char* name = ethosu_rt::error_name(static_cast<Error>(e));
    EXPECT_TRUE(name != nullptr && name[0] != '\0');
    EXPECT_TRUE(strcmp(name, "unknown error") != 0);
  }
  EXPECT_STREQ(ethosu_rt::error_name(Error::kTruncated), "truncated");
}

}  // namespace
