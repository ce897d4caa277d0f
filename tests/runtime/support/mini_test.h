// A googletest-shaped harness small enough for bare metal: tests register themselves
// through static constructors and run from main(); failures print file:line and both
// values; main() returns non-zero when any test failed, which becomes the semihosting
// exit status under QEMU.
#ifndef ETHOSU_RT_TESTS_SUPPORT_MINI_TEST_H_
#define ETHOSU_RT_TESTS_SUPPORT_MINI_TEST_H_

#include <stdint.h>
#include <string.h>

#include <type_traits>

namespace mini_test {

struct TestCase {
  const char* suite;
  const char* name;
  void (*body)();
  TestCase* next;
};

struct Registrar {
  explicit Registrar(TestCase* test);
};

// Text of one value, formatted without printf (newlib lacks some formats).
struct Text {
  char data[72];
};
Text text_signed(long long value);
Text text_unsigned(unsigned long long value);
Text text_double(double value);
Text text_string(const char* value);
Text text_pointer(const void* value);

template <typename T>
Text text_of(const T& value) {
  if constexpr (std::is_same<T, bool>::value) {
    return text_string(value ? "true" : "false");
  } else if constexpr (std::is_enum<T>::value) {
    return text_signed(static_cast<long long>(value));
  } else if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
    return text_signed(static_cast<long long>(value));
  } else if constexpr (std::is_integral<T>::value) {
    return text_unsigned(static_cast<unsigned long long>(value));
  } else if constexpr (std::is_floating_point<T>::value) {
    return text_double(static_cast<double>(value));
  } else if constexpr (std::is_convertible<T, const char*>::value) {
    return text_string(value);
  } else if constexpr (std::is_pointer<T>::value || std::is_null_pointer<T>::value) {
    return text_pointer(value);
  } else {
    return text_string("<value>");
  }
}

void fail(const char* file, int line, const char* expression, const Text& left, const Text& right);
int run_all(int argc, char** argv);

inline double absolute(double v) { return v < 0 ? -v : v; }

}  // namespace mini_test

#define TEST(suite, name)                                                                     \
  static void suite##_##name##_body();                                                        \
  static ::mini_test::TestCase suite##_##name##_case = {#suite, #name, suite##_##name##_body, \
                                                        nullptr};                             \
  static ::mini_test::Registrar suite##_##name##_registrar(&suite##_##name##_case);           \
  static void suite##_##name##_body()

#define MINI_TEST_COMPARE_(a, op, b, on_failure)                                              \
  do {                                                                                        \
    const auto& mini_a_ = (a);                                                                \
    const auto& mini_b_ = (b);                                                                \
    if (!(mini_a_ op mini_b_)) {                                                              \
      ::mini_test::fail(__FILE__, __LINE__, #a " " #op " " #b, ::mini_test::text_of(mini_a_), \
                        ::mini_test::text_of(mini_b_));                                       \
      on_failure;                                                                             \
    }                                                                                         \
  } while (0)

#define EXPECT_EQ(a, b) MINI_TEST_COMPARE_(a, ==, b, (void)0)
#define EXPECT_NE(a, b) MINI_TEST_COMPARE_(a, !=, b, (void)0)
#define EXPECT_LT(a, b) MINI_TEST_COMPARE_(a, <, b, (void)0)
#define EXPECT_LE(a, b) MINI_TEST_COMPARE_(a, <=, b, (void)0)
#define EXPECT_GT(a, b) MINI_TEST_COMPARE_(a, >, b, (void)0)
#define EXPECT_GE(a, b) MINI_TEST_COMPARE_(a, >=, b, (void)0)
#define EXPECT_TRUE(a) MINI_TEST_COMPARE_(static_cast<bool>(a), ==, true, (void)0)
#define EXPECT_FALSE(a) MINI_TEST_COMPARE_(static_cast<bool>(a), ==, false, (void)0)
#define ASSERT_EQ(a, b) MINI_TEST_COMPARE_(a, ==, b, return )
#define ASSERT_NE(a, b) MINI_TEST_COMPARE_(a, !=, b, return )
#define ASSERT_LE(a, b) MINI_TEST_COMPARE_(a, <=, b, return )
#define ASSERT_GT(a, b) MINI_TEST_COMPARE_(a, >, b, return )
#define ASSERT_TRUE(a) MINI_TEST_COMPARE_(static_cast<bool>(a), ==, true, return )
#define ASSERT_FALSE(a) MINI_TEST_COMPARE_(static_cast<bool>(a), ==, false, return )
#define EXPECT_STREQ(a, b)                                                             \
  do {                                                                                 \
    if (strcmp((a), (b)) != 0) {                                                       \
      ::mini_test::fail(__FILE__, __LINE__, #a " == " #b, ::mini_test::text_string(a), \
                        ::mini_test::text_string(b));                                  \
    }                                                                                  \
  } while (0)
#define EXPECT_NEAR(a, b, tolerance)                                                             \
  MINI_TEST_COMPARE_(::mini_test::absolute(static_cast<double>(a) - static_cast<double>(b)), <=, \
                     static_cast<double>(tolerance), (void)0)
#define EXPECT_CONTAINS(haystack, needle)                                                      \
  do {                                                                                         \
    if (strstr((haystack), (needle)) == nullptr) {                                             \
      ::mini_test::fail(__FILE__, __LINE__, #haystack " contains " #needle,                    \
                        ::mini_test::text_string(haystack), ::mini_test::text_string(needle)); \
    }                                                                                          \
  } while (0)

#endif  // ETHOSU_RT_TESTS_SUPPORT_MINI_TEST_H_
