/* test_size.c - parse_size and format_bytes: every unit, exact fractions,
 * strict rejection of junk, zero, fractional bytes and overflow. */
#include "ir.h"
#include "test.h"

/* parse s, expecting success with the given byte count */
#define OK(s, want)                                            \
    do {                                                       \
        int64_t b_ = -1;                                       \
        if (ASSERT_TRUE(parse_size(s, &b_))) ASSERT(want, b_); \
    } while (0)
/* parse s, expecting rejection that leaves the output alone */
#define BAD(s)                             \
    do {                                   \
        int64_t b_ = -7;                   \
        ASSERT(false, parse_size(s, &b_)); \
        ASSERT(-7, b_);                    \
    } while (0)
#define FMT(bytes, want) ASSERT_STR(want, format_bytes(bytes, buf, sizeof buf))

static const int64_t KI = (int64_t)1 << 10, MI = (int64_t)1 << 20, GI = (int64_t)1 << 30, TI = (int64_t)1 << 40;

static void test_plain(void) {
    OK("1", 1);
    OK("123", 123);
    OK("007", 7);
    OK("123B", 123);
    OK("9223372036854775807", INT64_MAX);
    OK("00000000000000000000000000000001", 1);
}

static void test_units(void) {
    OK("4K", 4 * KI);
    OK("512M", 512 * MI);
    OK("8G", 8 * GI);
    OK("2T", 2 * TI);
    OK("1KiB", KI);
    OK("3MiB", 3 * MI);
    OK("1GiB", GI);
    OK("5TiB", 5 * TI);
    OK("1kB", 1000);
    OK("1KB", 1000);
    OK("7MB", 7000000);
    OK("8000MB", 8000000000);
    OK("2GB", 2000000000);
    OK("3TB", 3000000000000);
    OK("8388607T", 8388607 * TI); /* 2^63 - 2^40 */
    OK("9223372036854775kB", 9223372036854775000);
}

static void test_fractions(void) {
    OK("1.5GiB", 1610612736);
    OK("0.5G", GI / 2);
    OK("1.5K", 1536);
    OK("0.25KiB", 256);
    OK("2.5kB", 2500);
    OK("1.50G", GI + GI / 2);
    OK("1.0B", 1);
    OK("0.001kB", 1);
    OK("0.0009765625K", 1);                               /* 2^-10 K */
    OK("0.0000000000009094947017729282379150390625T", 1); /* 2^-40 T */
    OK("1.000000000000000000000000000000000000000000000000MB", 1000000);
    OK("0.000000000931322574615478515625G", 1); /* 2^-30 G */
    OK("9223372036854775.807kB", INT64_MAX);
    OK("1.125MiB", MI + MI / 8);
}

static void test_rejects(void) {
    int64_t b;
    ASSERT(false, parse_size(NULL, &b));
    BAD("");
    BAD("G");
    BAD("B");
    BAD("kB");
    BAD("-1G");
    BAD("+1G");
    BAD("0");
    BAD("0G");
    BAD("0.0G");
    BAD("000B");
    BAD("1.5"); /* a fraction needs a unit */
    BAD("1.0");
    BAD("1.5B"); /* fractional bytes */
    BAD("0.3B");
    OK("0.1K", 102); /* 102.4 bytes, rounded down */
    OK("3.3M", 3460300);
    BAD("0.0001K");
    BAD("0.0000000000000000000000000000000000000000000001T");
    BAD("1.G");
    BAD(".5G");
    BAD("1..5G");
    BAD("1.5.5G");
    BAD("1,5G");
    BAD("8 G");
    BAD(" 8G");
    BAD("8G ");
    BAD("8G\n");
    BAD("8g");
    BAD("8k");
    BAD("8kb");
    BAD("8gib");
    BAD("8Gi");
    BAD("8GiBB");
    BAD("8Kib");
    BAD("8kiB");
    BAD("8mB");
    BAD("8b");
    BAD("1e9");
    BAD("0x10");
    BAD("inf");
    BAD("nan");
    BAD("99999999999T");
    BAD("8388608T"); /* exactly 2^63 */
    BAD("9223372036854775808");
    BAD("12345678901234567890123");
    BAD("9223372036854775.808kB");
    BAD("9223372036854775807.5K");
    BAD("10000000000000000000000000000000000000000G");
}

static void test_format(void) {
    char buf[32];
    FMT(0, "0 B");
    FMT(1, "1 B");
    FMT(123, "123 B");
    FMT(1023, "1023 B");
    FMT(KI, "1.00 KiB");
    FMT(1536, "1.50 KiB");
    FMT(MI - 1, "1.00 MiB");
    FMT(512 * MI, "512.00 MiB");
    FMT(8 * GI, "8.00 GiB");
    FMT(GI + GI / 2, "1.50 GiB");
    FMT(2 * TI, "2.00 TiB");
    FMT(1024 * TI, "1.00 PiB");
    FMT(INT64_MAX, "8.00 EiB");
    FMT(-5, "-5 B");
    FMT(-2048, "-2.00 KiB");
    FMT(INT64_MIN, "-8.00 EiB");
    ASSERT_TRUE(format_bytes(1, buf, sizeof buf) == buf);
    char small[4];
    ASSERT_STR("8.0", format_bytes(8 * GI, small, sizeof small));
    format_bytes(8 * GI, small, 0); /* must not write */
    ASSERT_STR("8.0", small);
}

/* A formatted exact binary size parses back to itself. */
static void test_roundtrip(void) {
    const char *in[] = {"1.5GiB", "0.5G", "512M", "1.25T", "3KiB"};
    for (size_t i = 0; i < sizeof in / sizeof *in; i++) {
        char buf[32], unit[8];
        int64_t b = 0, back = 0;
        double v;
        ASSERT_TRUE(parse_size(in[i], &b));
        format_bytes(b, buf, sizeof buf);
        ASSERT(2, sscanf(buf, "%lf %7s", &v, unit));
        snprintf(buf, sizeof buf, "%g%s", v, unit);
        ASSERT_TRUE(parse_size(buf, &back));
        ASSERT(b, back);
    }
}

int main(void) {
    test_plain();
    test_units();
    test_fractions();
    test_rejects();
    test_format();
    test_roundtrip();
    TEST_DONE();
}
