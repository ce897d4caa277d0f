// Checks that log file:line and the offending values, then return an Error.
//
// A failed check produces one line in the house grammar:
//   artifact.cc:120: block 5 'inputs' at 6080: payload bytes must be >= 112; got 100
// The line goes to a log sink the application installs (stderr on Linux, the
// semihosting console on bare metal, a capture buffer in tests). Formatting
// uses no printf and no heap, so it is safe in common/ and cortex_m/.
#ifndef ETHOSU_RT_CHECK_H_
#define ETHOSU_RT_CHECK_H_

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "ethosu_rt/error.h"

namespace ethosu_rt {

// Checked values travel as 64 bits plus a signedness flag in the site, so a failed check
// costs one call with plain integer arguments.
template <typename T>
constexpr bool check_is_signed() {
  static_assert(std::is_integral<T>::value || std::is_enum<T>::value,
                "check values must be integers or enums");
  if constexpr (std::is_enum<T>::value) {
    return std::is_signed<typename std::underlying_type<T>::type>::value;
  } else {
    return std::is_signed<T>::value;
  }
}

template <typename T>
constexpr uint64_t check_bits(T value) {
  if constexpr (check_is_signed<T>()) {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  } else {
    return static_cast<uint64_t>(value);
  }
}

enum CheckFlags : uint8_t {
  kCheckHex = 1,          // print the values in hex (magic numbers, addresses)
  kCheckLimitSigned = 2,  // `limit` holds an int64_t
  kCheckGotSigned = 4,    // `got` holds an int64_t
};

// The static half of a check: lives in read-only data, one per check site.
struct CheckSite {
  const char* file;
  const char* what;      // "payload bytes"
  const char* relation;  // "<=", "==", ... or nullptr for a statement made of texts
  uint16_t line;
  Error error;
  uint8_t flags;  // CheckFlags
};

// The dynamic half: where it happened and the two values compared.
struct CheckFailure {
  const CheckSite* site;
  const char* where;       // "block 5 'inputs' at offset 6080", may be nullptr
  uint64_t limit;          // right-hand side of the relation
  uint64_t got;            // left-hand side, the value that failed
  const char* limit_text;  // replaces `limit` when not null
  const char* got_text;    // replaces `got` when not null
};

using LogSink = void (*)(const CheckFailure& failure, void* user);

// Installs the sink (nullptr silences logging). Not thread-safe; call once at start-up.
void set_log_sink(LogSink sink, void* user);

// Sends `failure` to the sink and returns its error.
Error report_check(const CheckFailure& failure);

// The failure path of the check macros, kept out of line and cold.
__attribute__((cold, noinline)) Error report_values(const CheckSite& site, const char* where,
                                                    uint64_t limit, uint64_t got);
__attribute__((cold, noinline)) Error report_texts(const CheckSite& site, const char* where,
                                                   const char* limit_text, const char* got_text);

// Formats `failure` as one line (no newline) into `out`; always NUL-terminates when
// `out_len` > 0 and truncates when needed. Returns the untruncated length.
size_t format_check(const CheckFailure& failure, char* out, size_t out_len);

// A bounded string builder for composing `where` texts without a heap.
class TextBuffer {
 public:
  TextBuffer(char* data, size_t capacity);
  TextBuffer& add(const char* text);
  TextBuffer& add(const char* text, size_t max_len);  // stops at NUL or max_len
  // Like add(text, max_len), but shows bytes outside printable ASCII as '?', so text
  // taken from an artifact cannot break the one-line log.
  TextBuffer& add_printable(const char* text, size_t max_len);
  TextBuffer& add_u64(uint64_t value, bool hex = false);
  TextBuffer& add_i64(int64_t value, bool hex = false);
  const char* c_str() const { return data_; }
  size_t length() const { return length_; }

 private:
  char* data_;
  size_t capacity_;
  size_t length_;
};

}  // namespace ethosu_rt

// ETHOSU_RT_CHECK_TEXT=0 (CMake option of the same name) strips the descriptions from
// every check for the smallest firmware: a failure then logs "file:line: must be <rel>
// <limit>; got <value>" and the `where`/`what` texts are neither stored nor composed.
#ifndef ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_CHECK_TEXT 1
#endif
#if ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_TEXT_(text) (text)
#else
#define ETHOSU_RT_TEXT_(text) (static_cast<void>(sizeof(text)), nullptr)
#endif

#if defined(__FILE_NAME__)
#define ETHOSU_RT_FILE __FILE_NAME__
#else
#define ETHOSU_RT_FILE __FILE__
#endif

#define ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, hex)                              \
  do {                                                                                             \
    const auto ethosu_rt_got_ = (got);                                                             \
    const auto ethosu_rt_limit_ = (limit);                                                         \
    if (!(ethosu_rt_got_ rel ethosu_rt_limit_)) {                                                  \
      using ethosu_rt_got_t_ = typename std::decay<decltype(ethosu_rt_got_)>::type;                \
      using ethosu_rt_limit_t_ = typename std::decay<decltype(ethosu_rt_limit_)>::type;            \
      static const ::ethosu_rt::CheckSite ethosu_rt_site_ = {                                      \
          ETHOSU_RT_FILE,                                                                          \
          ETHOSU_RT_TEXT_(what),                                                                   \
          #rel,                                                                                    \
          __LINE__,                                                                                \
          (err),                                                                                   \
          static_cast<uint8_t>(                                                                    \
              ((hex) ? ::ethosu_rt::kCheckHex : 0) |                                               \
              (::ethosu_rt::check_is_signed<ethosu_rt_limit_t_>() ? ::ethosu_rt::kCheckLimitSigned \
                                                                  : 0) |                           \
              (::ethosu_rt::check_is_signed<ethosu_rt_got_t_>() ? ::ethosu_rt::kCheckGotSigned     \
                                                                : 0))};                            \
      return ::ethosu_rt::report_values(ethosu_rt_site_, ETHOSU_RT_TEXT_(where),                   \
                                        ::ethosu_rt::check_bits(ethosu_rt_limit_),                 \
                                        ::ethosu_rt::check_bits(ethosu_rt_got_));                  \
    }                                                                                              \
  } while (0)

// Returns `err` unless `got rel limit`, e.g.
//   ETHOSU_RT_CHECK(block_size, >=, need, Error::kTruncated, where, "payload bytes");
// `where` is only evaluated when the check fails.
#define ETHOSU_RT_CHECK(got, rel, limit, err, where, what) \
  ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, false)

// Same, printing both values in hex (magic numbers, addresses).
#define ETHOSU_RT_CHECK_HEX(got, rel, limit, err, where, what) \
  ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, true)

// Reports a failure described by texts and returns `err`: "<where>: <what>[ must be
// <limit_text>][; got <got_text>]". For string mismatches and conditions that are not a
// comparison of two numbers; either text may be nullptr.
#define ETHOSU_RT_FAIL_TEXT(err, where, what, limit_text, got_text)                           \
  do {                                                                                        \
    static const ::ethosu_rt::CheckSite ethosu_rt_site_ = {                                   \
        ETHOSU_RT_FILE, ETHOSU_RT_TEXT_(what), nullptr, __LINE__, (err), 0};                  \
    return ::ethosu_rt::report_texts(ethosu_rt_site_, ETHOSU_RT_TEXT_(where),                 \
                                     ETHOSU_RT_TEXT_(limit_text), ETHOSU_RT_TEXT_(got_text)); \
  } while (0)

// Returns `err` unless `cond`, logging "<where>: <statement>", e.g.
//   ETHOSU_RT_CHECK_TRUE(p != nullptr, Error::kBadArgument, "artifact", "data must not be null");
#define ETHOSU_RT_CHECK_TRUE(cond, err, where, statement)           \
  do {                                                              \
    if (!(cond)) {                                                  \
      ETHOSU_RT_FAIL_TEXT(err, where, statement, nullptr, nullptr); \
    }                                                               \
  } while (0)

// Returns `err` unless `cond`; the message lists the allowed values as text and prints
// `got` as a number: "<what> must be <allowed>; got <got>".
#define ETHOSU_RT_CHECK_ONE_OF(cond, got, err, where, what, allowed)                 \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      const auto ethosu_rt_got_ = (got);                                             \
      using ethosu_rt_got_t_ = typename std::decay<decltype(ethosu_rt_got_)>::type;  \
      static const ::ethosu_rt::CheckSite ethosu_rt_site_ = {                        \
          ETHOSU_RT_FILE,                                                            \
          ETHOSU_RT_TEXT_(what),                                                     \
          "==",                                                                      \
          __LINE__,                                                                  \
          (err),                                                                     \
          static_cast<uint8_t>(::ethosu_rt::check_is_signed<ethosu_rt_got_t_>()      \
                                   ? ::ethosu_rt::kCheckGotSigned                    \
                                   : 0)};                                            \
      return ::ethosu_rt::report_check({&ethosu_rt_site_, ETHOSU_RT_TEXT_(where), 0, \
                                        ::ethosu_rt::check_bits(ethosu_rt_got_),     \
                                        ETHOSU_RT_TEXT_(allowed), nullptr});         \
    }                                                                                \
  } while (0)

// Propagates a non-OK Error from a call.
#define ETHOSU_RT_TRY(expr)                           \
  do {                                                \
    const ::ethosu_rt::Error ethosu_rt_err_ = (expr); \
    if (ethosu_rt_err_ != ::ethosu_rt::Error::kOk) {  \
      return ethosu_rt_err_;                          \
    }                                                 \
  } while (0)

#endif  // ETHOSU_RT_CHECK_H_
