// What SQLite's pre-update hook would cost `reseed package` if it fed the incremental content hash's
// row set during the load (Benchmarks/README.md, "Figure 5: the row set during the load, measured"):
// loads rows of figure 5's shape as the CSV step does (32 rows a statement, values bound as text,
// the build's pragmas), once without a hook, once with a hook that reads every new row's values and
// writes the canonical encoding the row set hashes, and reads them back once as the content hash does.
// CPU time of this process (CLOCK_PROCESS_CPUTIME_ID), medians of ROUNDS, in turns.
//
//   cc -O2 -DSQLITE_ENABLE_PREUPDATE_HOOK Benchmarks/preupdate_hook.c -lsqlite3 -o /tmp/preupdate_hook
//   /tmp/preupdate_hook [ROWS] [ROUNDS]        (defaults: 1000000 rows, 5 rounds; needs a SQLite built
//                                               with the hook, as Debian's is and Apple's is not)
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { group = 32, columns = 4 };

static double cpu_seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return now.tv_sec + now.tv_nsec / 1e9;
}

// The canonical encoding of one value (the tags and big-endian lengths of ContentHash.md).
static size_t encode(sqlite3_value *value, uint8_t *out) {
    uint64_t bits = 0;
    size_t length = 0;
    const void *bytes = NULL;
    switch (sqlite3_value_type(value)) {
    case SQLITE_INTEGER: out[0] = 1; bits = (uint64_t)sqlite3_value_int64(value); break;
    case SQLITE_FLOAT: { double real = sqlite3_value_double(value); out[0] = 2; memcpy(&bits, &real, 8); break; }
    case SQLITE_TEXT: out[0] = 3; bytes = sqlite3_value_text(value); length = (size_t)sqlite3_value_bytes(value); bits = length; break;
    case SQLITE_BLOB: out[0] = 4; bytes = sqlite3_value_blob(value); length = (size_t)sqlite3_value_bytes(value); bits = length; break;
    default: out[0] = 0; return 1;
    }
    for (int index = 8; index >= 1; index--) { out[index] = (uint8_t)bits; bits >>= 8; }
    if (length) memcpy(out + 9, bytes, length);
    return 9 + length;
}

static uint8_t encoding[1 << 16];
static size_t encoded;

static void hook(void *context, sqlite3 *db, int op, const char *schema, const char *table, sqlite3_int64 old, sqlite3_int64 new) {
    if (op != SQLITE_INSERT) return;
    size_t at = 0;
    encoding[at++] = 0x52;
    for (int index = 0; index < sqlite3_preupdate_count(db); index++) {
        sqlite3_value *value;
        if (sqlite3_preupdate_new(db, index, &value) == SQLITE_OK) at += encode(value, encoding + at);
    }
    encoded += at;
}

static double load(int rows, int withHook) {
    unlink("/tmp/preupdate_hook.sqlite");
    sqlite3 *db;
    sqlite3_open_v2("/tmp/preupdate_hook.sqlite", &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_exec(db, "PRAGMA page_size = 4096; PRAGMA journal_mode = DELETE; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
                     "PRAGMA cache_size = -32768; CREATE TABLE reading (id INTEGER PRIMARY KEY, station TEXT NOT NULL, value REAL, note TEXT);", NULL, NULL, NULL);
    if (withHook) sqlite3_preupdate_hook(db, hook, NULL);
    char sql[4096] = "INSERT INTO reading (id, station, value, note) VALUES (?, ?, ?, ?)";
    for (int row = 1; row < group; row++) strcat(sql, ", (?, ?, ?, ?)");
    sqlite3_stmt *insert;
    sqlite3_prepare_v2(db, sql, -1, &insert, NULL);
    char text[group][columns][40];
    srand(42);
    double start = cpu_seconds();
    sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    for (int first = 1; first + group - 1 <= rows; first += group) {
        for (int offset = 0; offset < group; offset++) {
            int id = first + offset, parameter = offset * columns + 1;
            snprintf(text[offset][0], 40, "%d", id);
            snprintf(text[offset][1], 40, "ST%04d", rand() % 1000);
            snprintf(text[offset][2], 40, "%.3f", rand() / (double)RAND_MAX * 100 - 50);
            snprintf(text[offset][3], 40, "note %d, checked", id);
            for (int column = 0; column < columns; column++) {
                if (column == 3 && id % 10 == 0) sqlite3_bind_null(insert, parameter + column);
                else sqlite3_bind_text(insert, parameter + column, text[offset][column], -1, SQLITE_STATIC);
            }
        }
        if (sqlite3_step(insert) != SQLITE_DONE) { fprintf(stderr, "%s\n", sqlite3_errmsg(db)); exit(1); }
        sqlite3_reset(insert);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double seconds = cpu_seconds() - start;
    sqlite3_finalize(insert);
    sqlite3_close(db);
    return seconds;
}

// The content hash's read of the same rows: every value of every row, encoded the same way.
static double readBack(void) {
    sqlite3 *db;
    sqlite3_open_v2("/tmp/preupdate_hook.sqlite", &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    sqlite3_stmt *select;
    sqlite3_prepare_v2(db, "SELECT id, station, value, note FROM reading ORDER BY id", -1, &select, NULL);
    double start = cpu_seconds();
    while (sqlite3_step(select) == SQLITE_ROW) {
        size_t at = 0;
        encoding[at++] = 0x52;
        for (int index = 0; index < columns; index++) at += encode(sqlite3_column_value(select, index), encoding + at);
        encoded += at;
    }
    double seconds = cpu_seconds() - start;
    sqlite3_finalize(select);
    sqlite3_close(db);
    return seconds;
}

static int ascending(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count) {
    qsort(values, count, sizeof *values, ascending);
    return values[count / 2];
}

int main(int argc, char **argv) {
    int rows = argc > 1 ? atoi(argv[1]) : 1000000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    double plain[64], hooked[64], read[64];
    if (rounds < 1 || rounds > 64 || rows < group) { fprintf(stderr, "usage: preupdate_hook [ROWS >= 32] [ROUNDS 1-64]\n"); return 2; }
    for (int round = 0; round < rounds; round++) {
        plain[round] = load(rows, 0);
        hooked[round] = load(rows, 1);
        read[round] = readBack();
    }
    double p = median(plain, rounds), h = median(hooked, rounds), r = median(read, rounds);
    printf("{\"rows\": %d, \"load\": %.3f, \"loadWithHook\": %.3f, \"hookCost\": %.3f, \"readBack\": %.3f, \"ratio\": %.2f}\n",
           rows, p, h, h - p, r, h / p);
    unlink("/tmp/preupdate_hook.sqlite");
    return 0;
}
