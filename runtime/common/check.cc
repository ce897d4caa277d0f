#include "ethosu_rt/check.h"

namespace ethosu_rt {
namespace {

LogSink g_sink = nullptr;
void* g_sink_user = nullptr;

// CheckRelation as text, for CheckSite::relation ("==" for kOneOf: the allowed values
// are printed as the limit).
constexpr const char* kRelations[] = {nullptr, "==", "!=", "<", "<=", ">", ">=", "=="};

uint64_t widen(uint32_t bits, bool is_signed) {
  return is_signed ? static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(bits))) : bits;
}

// Unpacks `code` (check_code) into `site` and sends the failure to the sink.
Error report(const char* file, const char* what, uint32_t code, CheckFailure failure) {
  const CheckSite site = {file,
                          what,
                          kRelations[(code >> 20) & 7u],
                          static_cast<uint16_t>(code),
                          static_cast<Error>((code >> 16) & 0xFu),
                          static_cast<uint8_t>((code >> 23) & 7u)};
  failure.site = &site;
  return report_check(failure);
}

void add_value(TextBuffer& text, uint64_t bits, bool is_signed, bool hex) {
  if (is_signed) {
    text.add_i64(static_cast<int64_t>(bits), hex);
  } else {
    text.add_u64(bits, hex);
  }
}

}  // namespace

void set_log_sink(LogSink sink, void* user) {
  g_sink = sink;
  g_sink_user = user;
}

Error report_check(const CheckFailure& failure) {
  if (g_sink != nullptr) {
    g_sink(failure, g_sink_user);
  }
  return failure.site->error;
}

#if ETHOSU_RT_CHECK_TEXT
Error check_failed(const CheckText& site, const char* where, uint32_t limit, uint32_t got) {
  return check_failed_wide(site, where, widen(limit, (site.code >> 23) & kCheckLimitSigned),
                           widen(got, (site.code >> 23) & kCheckGotSigned));
}

Error check_failed_wide(const CheckText& site, const char* where, uint64_t limit, uint64_t got) {
  return report(site.file, site.what, site.code,
                CheckFailure{nullptr, where, limit, got, nullptr, nullptr});
}

Error check_failed_text(const CheckText& site, const char* where, const char* limit_text,
                        const char* got_text) {
  return report(site.file, site.what, site.code,
                CheckFailure{nullptr, where, 0, 0, limit_text, got_text});
}

Error check_failed_one_of(const CheckText& site, const char* where, const char* allowed,
                          uint32_t got) {
  return report(site.file, site.what, site.code,
                CheckFailure{nullptr, where, 0, widen(got, (site.code >> 23) & kCheckGotSigned),
                             allowed, nullptr});
}

namespace {

struct Composed {
  char text[96];
};

const char* compose(const LazyWhere& where, Composed* out) {
  TextBuffer text(out->text, sizeof(out->text));
  where.format(text, where);
  return out->text;
}

}  // namespace

Error check_failed(const CheckText& site, const LazyWhere& where, uint32_t limit, uint32_t got) {
  Composed text;
  return check_failed(site, compose(where, &text), limit, got);
}

Error check_failed_wide(const CheckText& site, const LazyWhere& where, uint64_t limit,
                        uint64_t got) {
  Composed text;
  return check_failed_wide(site, compose(where, &text), limit, got);
}

Error check_failed_text(const CheckText& site, const LazyWhere& where, const char* limit_text,
                        const char* got_text) {
  Composed text;
  return check_failed_text(site, compose(where, &text), limit_text, got_text);
}

Error check_failed_one_of(const CheckText& site, const LazyWhere& where, const char* allowed,
                          uint32_t got) {
  Composed text;
  return check_failed_one_of(site, compose(where, &text), allowed, got);
}
#else
Error check_failed(const char* file, uint32_t code, uint32_t limit, uint32_t got) {
  return check_failed_wide(file, code, widen(limit, (code >> 23) & kCheckLimitSigned),
                           widen(got, (code >> 23) & kCheckGotSigned));
}

Error check_failed_wide(const char* file, uint32_t code, uint64_t limit, uint64_t got) {
  // Without texts a one-of check has no list of allowed values to print.
  const bool one_of = ((code >> 20) & 7u) == static_cast<uint32_t>(CheckRelation::kOneOf);
  return report(
      file, nullptr, code,
      CheckFailure{nullptr, nullptr, limit, got, one_of ? "an allowed value" : nullptr, nullptr});
}
#endif

TextBuffer::TextBuffer(char* data, size_t capacity) : data_(data), capacity_(capacity), length_(0) {
  if (capacity_ > 0) {
    data_[0] = '\0';
  }
}

TextBuffer& TextBuffer::add(const char* text) { return add(text, static_cast<size_t>(-1)); }

TextBuffer& TextBuffer::add(const char* text, size_t max_len) {
  for (size_t i = 0; i < max_len && text[i] != '\0'; ++i) {
    // Count every character so the caller learns the untruncated length.
    if (length_ + 1 < capacity_) {
      data_[length_] = text[i];
      data_[length_ + 1] = '\0';
    }
    ++length_;
  }
  return *this;
}

TextBuffer& TextBuffer::add_printable(const char* text, size_t max_len) {
  char one[2] = {0, 0};
  for (size_t i = 0; i < max_len && text[i] != '\0'; ++i) {
    one[0] = (text[i] >= ' ' && text[i] <= '~') ? text[i] : '?';
    add(one);
  }
  return *this;
}

TextBuffer& TextBuffer::add_u64(uint64_t value, bool hex) {
  // Long division by the base over 16-bit limbs: 32-bit arithmetic only, so no 64-bit
  // division routine is linked into the firmware.
  const uint32_t base = hex ? 16u : 10u;
  uint32_t limbs[4] = {
      static_cast<uint32_t>(value >> 48), static_cast<uint32_t>(value >> 32) & 0xFFFFu,
      static_cast<uint32_t>(value >> 16) & 0xFFFFu, static_cast<uint32_t>(value) & 0xFFFFu};
  char digits[21];  // 20 decimal digits of UINT64_MAX, then the NUL
  size_t n = sizeof(digits) - 1;
  digits[n] = '\0';
  bool more = true;
  while (more) {
    uint32_t rest = 0;
    more = false;
    for (uint32_t& limb : limbs) {
      const uint32_t part = (rest << 16) | limb;
      limb = part / base;
      rest = part % base;
      more = more || limb != 0;
    }
    digits[--n] = static_cast<char>(rest < 10 ? '0' + rest : 'a' + (rest - 10));
  }
  if (hex) {
    add("0x");
  }
  return add(digits + n);
}

TextBuffer& TextBuffer::add_i64(int64_t value, bool hex) {
  if (value < 0) {
    add("-");
    // Negate in unsigned arithmetic so INT64_MIN is exact.
    return add_u64(0u - static_cast<uint64_t>(value), hex);
  }
  return add_u64(static_cast<uint64_t>(value), hex);
}

size_t format_check(const CheckFailure& failure, char* out, size_t out_len) {
  const CheckSite& site = *failure.site;
  TextBuffer text(out, out_len);
  text.add(site.file).add(":").add_u64(site.line).add(": ");
  if (failure.where != nullptr && failure.where[0] != '\0') {
    text.add(failure.where).add(": ");
  }
  text.add(site.what != nullptr ? site.what : "value");
  const char* relation = site.relation;
  if (relation == nullptr) {
    if (failure.limit_text != nullptr) {
      text.add(" must be ").add(failure.limit_text);
    }
    if (failure.got_text != nullptr) {
      text.add("; got ").add(failure.got_text);
    }
    return text.length();
  }
  const bool hex = (site.flags & kCheckHex) != 0;
  if (relation[0] == '!') {
    text.add(" must not be ");
  } else {
    text.add(" must be ");
    if (relation[0] != '=') {
      text.add(relation).add(" ");
    }
  }
  if (failure.limit_text != nullptr) {
    text.add(failure.limit_text);
  } else {
    add_value(text, failure.limit, (site.flags & kCheckLimitSigned) != 0, hex);
  }
  text.add("; got ");
  if (failure.got_text != nullptr) {
    text.add(failure.got_text);
  } else {
    add_value(text, failure.got, (site.flags & kCheckGotSigned) != 0, hex);
  }
  return text.length();
}

}  // namespace ethosu_rt
