#include "semihosting.h"

#include <stdint.h>

#define SYS_WRITE0 0x04
#define SYS_GET_CMDLINE 0x15
#define SYS_EXIT 0x18
#define SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026

static int semihosting_call(int operation, void* argument) {
  register int r0 __asm__("r0") = operation;
  register void* r1 __asm__("r1") = argument;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void semihosting_write0(const char* text) { semihosting_call(SYS_WRITE0, (void*)(uintptr_t)text); }

void semihosting_exit(int status) {
  uint32_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
  semihosting_call(SYS_EXIT_EXTENDED, block);
  /* A host without the extension: only success or failure can be told apart. */
  semihosting_call(SYS_EXIT, (void*)(uintptr_t)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT : 0));
  for (;;) {
  }
}

int semihosting_command_line(char** argv, int max) {
  static char line[1024];
  struct {
    char* buffer;
    int length;
  } block = {line, (int)sizeof(line) - 1};
  int argc = 0;
  if (semihosting_call(SYS_GET_CMDLINE, &block) == 0 && block.length > 0) {
    line[block.length] = '\0';
    char* p = line;
    while (*p != '\0' && argc < max) {
      while (*p == ' ') {
        *p++ = '\0';
      }
      if (*p == '\0') {
        break;
      }
      argv[argc++] = p;
      while (*p != '\0' && *p != ' ') {
        ++p;
      }
    }
  }
  if (argc == 0) {
    static char name[] = "firmware";
    argv[argc++] = name;
  }
  argv[argc] = 0;
  return argc;
}
