// The test API every runtime test includes. On hosted builds it is googletest; on bare
// metal it is mini_test.h, which implements the same subset (TEST, EXPECT_*/ASSERT_* for
// EQ/NE/LT/LE/GT/GE/TRUE/FALSE/STREQ/NEAR) without a heap or exceptions. EXPECT_CONTAINS
// checks a substring and prints both strings when it fails.
#ifndef ETHOSU_RT_TESTS_SUPPORT_TEST_API_H_
#define ETHOSU_RT_TESTS_SUPPORT_TEST_API_H_

#include <string.h>

#include "ethosu_rt/error.h"

#if defined(ETHOSU_RT_TEST_GTEST)
#include <gtest/gtest.h>

#include <ostream>

namespace ethosu_rt {
inline void PrintTo(Error error, std::ostream* out) { *out << error_name(error); }
}  // namespace ethosu_rt

namespace test_support {
inline ::testing::AssertionResult contains(const char* haystack_expr, const char* needle_expr,
                                           const char* haystack, const char* needle) {
  if (strstr(haystack, needle) != nullptr) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << haystack_expr << " must contain " << needle_expr
                                       << "\n  text: " << haystack << "\n  wanted: " << needle;
}
}  // namespace test_support

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_PRED_FORMAT2(::test_support::contains, haystack, needle)

#else
#include "mini_test.h"
#endif

#endif  // ETHOSU_RT_TESTS_SUPPORT_TEST_API_H_
