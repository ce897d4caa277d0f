/* Minimal Arm semihosting calls that do not depend on newlib's state. */
#ifndef ETHOSU_RT_SEMIHOSTING_H_
#define ETHOSU_RT_SEMIHOSTING_H_

#ifdef __cplusplus
extern "C" {
#endif

#define SEMIHOSTING_MAX_ARGS 32

/* Writes a NUL-terminated string to the debugger console (SYS_WRITE0). */
void semihosting_write0(const char* text);

/* Ends the program with `status` (SYS_EXIT_EXTENDED, falling back to SYS_EXIT). */
__attribute__((noreturn)) void semihosting_exit(int status);

/* Splits the command line (SYS_GET_CMDLINE) on spaces into argv[0..max); returns argc
 * (at least 1: argv[0] is "firmware" when the host gives no command line). */
int semihosting_command_line(char** argv, int max);

#ifdef __cplusplus
}
#endif

#endif /* ETHOSU_RT_SEMIHOSTING_H_ */
