#include "mini_test.h"

#include <stdio.h>

namespace mini_test {
namespace {

TestCase* g_first = nullptr;
TestCase* g_last = nullptr;
int g_failures_in_test = 0;

void append(Text* text, size_t* length, char c) {
  if (*length + 1 < sizeof(text->data)) {
    text->data[(*length)++] = c;
    text->data[*length] = '\0';
  }
}

void append_digits(Text* text, size_t* length, unsigned long long value) {
  char digits[24];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  while (n > 0) {
    append(text, length, digits[--n]);
  }
}

}  // namespace

Registrar::Registrar(TestCase* test) {
  // Keep registration order, which is source order within a file.
  if (g_last == nullptr) {
    g_first = test;
  } else {
    g_last->next = test;
  }
  g_last = test;
}

Text text_unsigned(unsigned long long value) {
  Text text = {};
  size_t length = 0;
  append_digits(&text, &length, value);
  return text;
}

Text text_signed(long long value) {
  Text text = {};
  size_t length = 0;
  if (value < 0) {
    append(&text, &length, '-');
  }
  append_digits(&text, &length,
                value < 0 ? 0ull - static_cast<unsigned long long>(value)
                          : static_cast<unsigned long long>(value));
  return text;
}

Text text_double(double value) {
  Text text = {};
  size_t length = 0;
  if (value != value) {
    return text_string("nan");
  }
  if (value < 0) {
    append(&text, &length, '-');
    value = -value;
  }
  if (value > 1e18) {
    return text_string("<huge>");
  }
  const unsigned long long whole = static_cast<unsigned long long>(value);
  append_digits(&text, &length, whole);
  append(&text, &length, '.');
  unsigned long long micro = static_cast<unsigned long long>((value - whole) * 1e6 + 0.5);
  for (unsigned long long scale = 100000; scale > 0; scale /= 10) {
    append(&text, &length, static_cast<char>('0' + (micro / scale) % 10));
  }
  return text;
}

Text text_string(const char* value) {
  Text text = {};
  size_t length = 0;
  append(&text, &length, '"');
  for (const char* p = value != nullptr ? value : "(null)"; *p != '\0'; ++p) {
    append(&text, &length, *p);
  }
  append(&text, &length, '"');
  return text;
}

Text text_pointer(const void* value) {
  Text text = {};
  size_t length = 0;
  append(&text, &length, '0');
  append(&text, &length, 'x');
  const uintptr_t v = reinterpret_cast<uintptr_t>(value);
  for (int shift = static_cast<int>(sizeof(v) * 8) - 4; shift >= 0; shift -= 4) {
    append(&text, &length, "0123456789abcdef"[(v >> shift) & 0xF]);
  }
  return text;
}

void fail(const char* file, int line, const char* expression, const Text& left, const Text& right) {
  ++g_failures_in_test;
  printf("%s:%d: Failure\n  expected: %s\n  left:  %s\n  right: %s\n", file, line, expression,
         left.data, right.data);
}

int run_all(int /*argc*/, char** /*argv*/) {
  int tests = 0;
  int failed = 0;
  for (TestCase* test = g_first; test != nullptr; test = test->next) {
    printf("[ RUN      ] %s.%s\n", test->suite, test->name);
    g_failures_in_test = 0;
    test->body();
    ++tests;
    if (g_failures_in_test != 0) {
      ++failed;
      printf("[  FAILED  ] %s.%s\n", test->suite, test->name);
    } else {
      printf("[       OK ] %s.%s\n", test->suite, test->name);
    }
  }
  printf("[==========] %d tests ran, %d passed, %d failed\n", tests, tests - failed, failed);
  return failed;
}

}  // namespace mini_test

int main(int argc, char** argv) { return mini_test::run_all(argc, argv) == 0 ? 0 : 1; }
