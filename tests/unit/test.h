/* test.h - a tiny unit-test harness. Assertions count passes and failures and
 * print file:line, the expression and both values on a mismatch; they are
 * expressions returning whether they held. TEST_DONE() ends main with a
 * "N passed, N failed" line and a nonzero exit status on any failure.
 * Include once per test program.
 */
#ifndef ACC_TEST_H
#define ACC_TEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int test_passed, test_failed;

static inline bool test_result(bool ok) {
    if (ok) test_passed++;
    else test_failed++;
    return ok;
}

static inline bool test_int(const char *file, int line, const char *expr, intmax_t expected, intmax_t actual) {
    if (expected != actual) printf("%s:%d: %s: expected %jd, got %jd\n", file, line, expr, expected, actual);
    return test_result(expected == actual);
}

static inline bool test_true(const char *file, int line, const char *expr, bool cond) {
    if (!cond) printf("%s:%d: ASSERT_TRUE(%s) failed\n", file, line, expr);
    return test_result(cond);
}

static inline bool test_str(const char *file, int line, const char *expr, const char *expected, const char *actual) {
    bool ok = expected && actual ? !strcmp(expected, actual) : expected == actual;
    if (!ok)
        printf("%s:%d: %s: expected \"%s\", got \"%s\"\n", file, line, expr, expected ? expected : "(null)",
               actual ? actual : "(null)");
    return test_result(ok);
}

static inline int test_done(void) {
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

#define ASSERT(expected, actual) \
    test_int(__FILE__, __LINE__, "ASSERT(" #expected ", " #actual ")", (intmax_t)(expected), (intmax_t)(actual))
#define ASSERT_TRUE(cond) test_true(__FILE__, __LINE__, #cond, (cond))
#define ASSERT_STR(expected, actual) \
    test_str(__FILE__, __LINE__, "ASSERT_STR(" #expected ", " #actual ")", (expected), (actual))
#define TEST_DONE() return test_done()
/* EXPECT(cond, fmt, ...): ASSERT_TRUE with a printf-style message on failure */
#define EXPECT(cond, ...)                               \
    do {                                                \
        if (!test_result(cond)) {                       \
            printf("FAIL %s:%d: ", __FILE__, __LINE__); \
            printf(__VA_ARGS__);                        \
            printf("\n");                               \
        }                                               \
    } while (0)

#endif
