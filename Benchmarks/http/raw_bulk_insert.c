/* The floor for an NDJSON import: raw SQLite inserting ROWS rows shaped like the demo model's
 * Task (with its index), 1000 per transaction as the server's chunks are, in WAL mode with
 * synchronous=FULL, through one prepared statement. Prints rows per second. Built by
 * ndjson_import.sh; not part of the product.
 *
 *   raw_bulk_insert PATH ROWS */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void check(int rc, sqlite3 *db, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    fprintf(stderr, "raw_bulk_insert: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: raw_bulk_insert PATH ROWS\n"); return 2; }
  long rows = atol(argv[2]);
  sqlite3 *db;
  check(sqlite3_open(argv[1], &db), db, "open");
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                         "CREATE TABLE Task (pk INTEGER PRIMARY KEY, version INTEGER NOT NULL, title TEXT NOT NULL,"
                         " priority INTEGER, done INTEGER, estimate REAL, due REAL, project INTEGER);"
                         "CREATE INDEX Task_done_priority ON Task (done, priority);", 0, 0, 0), db, "schema");
  sqlite3_stmt *insert;
  check(sqlite3_prepare_v2(db, "INSERT INTO Task VALUES (?, 1, ?, ?, 0, ?, NULL, NULL)", -1, &insert, 0), db, "prepare");
  char title[32];
  double start = now();
  for (long i = 0; i < rows; i++) {
    if (i % 1000 == 0) check(sqlite3_exec(db, "BEGIN", 0, 0, 0), db, "begin");
    snprintf(title, sizeof title, "t%ld", i);
    sqlite3_bind_int64(insert, 1, i + 1);
    sqlite3_bind_text(insert, 2, title, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(insert, 3, i % 6);
    sqlite3_bind_double(insert, 4, i * 0.5);
    check(sqlite3_step(insert), db, "insert");
    sqlite3_reset(insert);
    if (i % 1000 == 999 || i == rows - 1) check(sqlite3_exec(db, "COMMIT", 0, 0, 0), db, "commit");
  }
  printf("%.0f\n", rows / (now() - start));
  sqlite3_finalize(insert);
  sqlite3_close(db);
  return 0;
}
