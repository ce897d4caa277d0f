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

// ETHOSU_RT_CHECK_TEXT=0 (CMake option of the same name) strips the descriptions from
// every check for the smallest firmware: a failure then logs "file:line: value must be
// <rel> <limit>; got <value>" and the `where`/`what` texts are neither stored nor composed.
#ifndef ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_CHECK_TEXT 1
#endif

namespace ethosu_rt {

// Every field a failed check reports except the texts, packed into one word that the
// failure call takes as an immediate, so a check site stores no per-site object in
// ETHOSU_RT_CHECK_TEXT=0 builds: bits 0..15 line, 16..19 Error, 20..22 CheckRelation,
// 23..25 CheckFlags.
enum class CheckRelation : uint8_t { kText, kEq, kNe, kLt, kLe, kGt, kGe, kOneOf };

enum CheckFlags : uint8_t {
  kCheckHex = 1,          // print the values in hex (magic numbers, addresses)
  kCheckLimitSigned = 2,  // `limit` holds an int64_t
  kCheckGotSigned = 4,    // `got` holds an int64_t
};

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

// The relation token of a check macro ("<=", "==", ...) as a CheckRelation.
constexpr CheckRelation check_relation(const char* rel) {
  return rel[0] == '='   ? CheckRelation::kEq
         : rel[0] == '!' ? CheckRelation::kNe
         : rel[0] == '<' ? (rel[1] == '=' ? CheckRelation::kLe : CheckRelation::kLt)
                         : (rel[1] == '=' ? CheckRelation::kGe : CheckRelation::kGt);
}

constexpr uint32_t check_code(unsigned line, Error error, CheckRelation relation, unsigned flags) {
  return (line & 0xFFFFu) | (static_cast<uint32_t>(error) << 16) |
         (static_cast<uint32_t>(relation) << 20) | (static_cast<uint32_t>(flags) << 23);
}
static_assert(static_cast<unsigned>(Error::kTimeout) < 16, "Error must fit in 4 bits");

// Values of up to 32 bits travel as one register each (the signedness is in the code);
// wider ones take the *_wide path.
template <typename T>
constexpr uint32_t check_u32(T value) {
  return static_cast<uint32_t>(value);
}
template <typename T>
constexpr uint64_t check_bits(T value) {
  if constexpr (check_is_signed<T>()) {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  } else {
    return static_cast<uint64_t>(value);
  }
}

// What a log sink receives: the site of the failed check ...
struct CheckSite {
  const char* file;
  const char* what;      // "payload bytes"; nullptr without ETHOSU_RT_CHECK_TEXT
  const char* relation;  // "<=", "==", ... or nullptr for a statement made of texts
  uint16_t line;
  Error error;
  uint8_t flags;  // CheckFlags
};

// ... and where it happened and the two values compared.
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

class TextBuffer;

// A `where` composed only when a check fails: `format` writes it from `context` and
// `values`, e.g. "block 5 'inputs' at offset 6080". A function whose checks share one
// context builds it once (a few stores) and hands it to each check (one register), instead
// of composing text at every failure site. Without ETHOSU_RT_CHECK_TEXT it is never read.
struct LazyWhere {
  void (*format)(TextBuffer& out, const LazyWhere& where);
  const void* context;
  size_t values[3];
};

// The failure paths of the check macros: out of line and cold, so a check site costs a
// compare, a branch and one call with register arguments.
#define ETHOSU_RT_COLD_ __attribute__((cold, noinline))
#if ETHOSU_RT_CHECK_TEXT
// The static half of a check with its texts, one per site in read-only data.
struct CheckText {
  const char* file;
  const char* what;
  uint32_t code;  // check_code()
};
ETHOSU_RT_COLD_ Error check_failed(const CheckText& site, const char* where, uint32_t limit,
                                   uint32_t got);
ETHOSU_RT_COLD_ Error check_failed_wide(const CheckText& site, const char* where, uint64_t limit,
                                        uint64_t got);
ETHOSU_RT_COLD_ Error check_failed_text(const CheckText& site, const char* where,
                                        const char* limit_text, const char* got_text);
ETHOSU_RT_COLD_ Error check_failed_one_of(const CheckText& site, const char* where,
                                          const char* allowed, uint32_t got);
// The same for a LazyWhere: compose it, then report as above.
ETHOSU_RT_COLD_ Error check_failed(const CheckText& site, const LazyWhere& where, uint32_t limit,
                                   uint32_t got);
ETHOSU_RT_COLD_ Error check_failed_wide(const CheckText& site, const LazyWhere& where,
                                        uint64_t limit, uint64_t got);
ETHOSU_RT_COLD_ Error check_failed_text(const CheckText& site, const LazyWhere& where,
                                        const char* limit_text, const char* got_text);
ETHOSU_RT_COLD_ Error check_failed_one_of(const CheckText& site, const LazyWhere& where,
                                          const char* allowed, uint32_t got);
#else
ETHOSU_RT_COLD_ Error check_failed(const char* file, uint32_t code, uint32_t limit, uint32_t got);
ETHOSU_RT_COLD_ Error check_failed_wide(const char* file, uint32_t code, uint64_t limit,
                                        uint64_t got);
#endif
#undef ETHOSU_RT_COLD_

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

#if defined(__FILE_NAME__)
#define ETHOSU_RT_FILE __FILE_NAME__
#else
#define ETHOSU_RT_FILE __FILE__
#endif

// ETHOSU_RT_REPORT_(fn, code, where, what, a, b): returns ethosu_rt::fn(...) for the site.
// Without texts, `where` and `what` are neither stored nor evaluated.
#if ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_REPORT_(fn, code, where, what, a, b)                                      \
  do {                                                                                      \
    static const ::ethosu_rt::CheckText ethosu_rt_site_ = {ETHOSU_RT_FILE, (what), (code)}; \
    return ::ethosu_rt::fn(ethosu_rt_site_, (where), (a), (b));                             \
  } while (0)
#else
#define ETHOSU_RT_REPORT_(fn, code, where, what, a, b)        \
  do {                                                        \
    static_cast<void>(sizeof(where));                         \
    static_cast<void>(sizeof(what));                          \
    return ::ethosu_rt::fn(ETHOSU_RT_FILE, (code), (a), (b)); \
  } while (0)
#endif

#define ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, hex)                              \
  do {                                                                                             \
    const auto ethosu_rt_got_ = (got);                                                             \
    const auto ethosu_rt_limit_ = (limit);                                                         \
    if (__builtin_expect(!(ethosu_rt_got_ rel ethosu_rt_limit_), 0)) {                             \
      using ethosu_rt_got_t_ = typename std::decay<decltype(ethosu_rt_got_)>::type;                \
      using ethosu_rt_limit_t_ = typename std::decay<decltype(ethosu_rt_limit_)>::type;            \
      constexpr uint32_t ethosu_rt_code_ = ::ethosu_rt::check_code(                                \
          __LINE__, (err), ::ethosu_rt::check_relation(#rel),                                      \
          ((hex) ? ::ethosu_rt::kCheckHex : 0) |                                                   \
              (::ethosu_rt::check_is_signed<ethosu_rt_limit_t_>() ? ::ethosu_rt::kCheckLimitSigned \
                                                                  : 0) |                           \
              (::ethosu_rt::check_is_signed<ethosu_rt_got_t_>() ? ::ethosu_rt::kCheckGotSigned     \
                                                                : 0));                             \
      if constexpr (sizeof(ethosu_rt_got_t_) <= 4 && sizeof(ethosu_rt_limit_t_) <= 4) {            \
        ETHOSU_RT_REPORT_(check_failed, ethosu_rt_code_, where, what,                              \
                          ::ethosu_rt::check_u32(ethosu_rt_limit_),                                \
                          ::ethosu_rt::check_u32(ethosu_rt_got_));                                 \
      } else {                                                                                     \
        ETHOSU_RT_REPORT_(check_failed_wide, ethosu_rt_code_, where, what,                         \
                          ::ethosu_rt::check_bits(ethosu_rt_limit_),                               \
                          ::ethosu_rt::check_bits(ethosu_rt_got_));                                \
      }                                                                                            \
    }                                                                                              \
  } while (0)

// Returns `err` unless `got rel limit`, e.g.
//   ETHOSU_RT_CHECK(block_size, >=, need, Error::kTruncated, where, "payload bytes");
// `where` (a text, nullptr or a LazyWhere) is only evaluated when the check fails.
#define ETHOSU_RT_CHECK(got, rel, limit, err, where, what) \
  ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, false)

// Same, printing both values in hex (magic numbers, addresses).
#define ETHOSU_RT_CHECK_HEX(got, rel, limit, err, where, what) \
  ETHOSU_RT_CHECK_IMPL_(got, rel, limit, err, where, what, true)

// Reports a failure described by texts and returns `err`: "<where>: <what>[ must be
// <limit_text>][; got <got_text>]". For string mismatches and conditions that are not a
// comparison of two numbers; either text may be nullptr.
#if ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_FAIL_TEXT(err, where, what, limit_text, got_text)                                \
  ETHOSU_RT_REPORT_(                                                                               \
      check_failed_text,                                                                           \
      ::ethosu_rt::check_code(__LINE__, (err), ::ethosu_rt::CheckRelation::kText, 0), where, what, \
      (limit_text), (got_text))
#else
#define ETHOSU_RT_FAIL_TEXT(err, where, what, limit_text, got_text)                            \
  do {                                                                                         \
    static_cast<void>(sizeof(limit_text));                                                     \
    static_cast<void>(sizeof(got_text));                                                       \
    ETHOSU_RT_REPORT_(                                                                         \
        check_failed,                                                                          \
        ::ethosu_rt::check_code(__LINE__, (err), ::ethosu_rt::CheckRelation::kText, 0), where, \
        what, 0u, 0u);                                                                         \
  } while (0)
#endif

// Returns `err` unless `cond`, logging "<where>: <statement>", e.g.
//   ETHOSU_RT_CHECK_TRUE(p != nullptr, Error::kBadArgument, "artifact", "data must not be null");
#define ETHOSU_RT_CHECK_TRUE(cond, err, where, statement)           \
  do {                                                              \
    if (__builtin_expect(!(cond), 0)) {                             \
      ETHOSU_RT_FAIL_TEXT(err, where, statement, nullptr, nullptr); \
    }                                                               \
  } while (0)

// Returns `err` unless `cond`; the message lists the allowed values as text and prints
// `got` (at most 32 bits) as a number: "<what> must be <allowed>; got <got>".
#if ETHOSU_RT_CHECK_TEXT
#define ETHOSU_RT_ONE_OF_FN_ check_failed_one_of
#define ETHOSU_RT_ONE_OF_LIMIT_(allowed) (allowed)
#else
#define ETHOSU_RT_ONE_OF_FN_ check_failed
#define ETHOSU_RT_ONE_OF_LIMIT_(allowed) (static_cast<void>(sizeof(allowed)), 0u)
#endif
#define ETHOSU_RT_CHECK_ONE_OF(cond, got, err, where, what, allowed)                               \
  do {                                                                                             \
    if (__builtin_expect(!(cond), 0)) {                                                            \
      const auto ethosu_rt_got_ = (got);                                                           \
      using ethosu_rt_got_t_ = typename std::decay<decltype(ethosu_rt_got_)>::type;                \
      static_assert(sizeof(ethosu_rt_got_t_) <= 4, "CHECK_ONE_OF values are at most 32 bits");     \
      constexpr uint32_t ethosu_rt_code_ = ::ethosu_rt::check_code(                                \
          __LINE__, (err), ::ethosu_rt::CheckRelation::kOneOf,                                     \
          ::ethosu_rt::check_is_signed<ethosu_rt_got_t_>() ? ::ethosu_rt::kCheckGotSigned : 0);    \
      ETHOSU_RT_REPORT_(ETHOSU_RT_ONE_OF_FN_, ethosu_rt_code_, where, what,                        \
                        ETHOSU_RT_ONE_OF_LIMIT_(allowed), ::ethosu_rt::check_u32(ethosu_rt_got_)); \
    }                                                                                              \
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
