/* The durable-writes floor for the HTTP benchmark: raw SQLite doing what a server without group
 * commit would, one INSERT per COMMIT, in WAL mode with synchronous=FULL (what --durability full
 * sets), into a table shaped like the demo model's Task, for SECONDS seconds. Prints the inserts
 * per second. Built by run.sh; not part of the product.
 *
 *   raw_insert PATH SECONDS */
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
    fprintf(stderr, "raw_insert: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) { fprintf(stderr, "usage: raw_insert PATH SECONDS\n"); return 2; }
  double seconds = atof(argv[2]);
  sqlite3 *db;
  check(sqlite3_open(argv[1], &db), db, "open");
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                         "CREATE TABLE IF NOT EXISTS task (pk INTEGER PRIMARY KEY, version INTEGER NOT NULL,"
                         " title TEXT NOT NULL, priority INTEGER, done INTEGER, estimate REAL, due REAL, project INTEGER)",
                     NULL, NULL, NULL), db, "schema");
  sqlite3_stmt *begin, *insert, *commit;
  check(sqlite3_prepare_v2(db, "BEGIN IMMEDIATE", -1, &begin, NULL), db, "prepare");
  check(sqlite3_prepare_v2(db, "INSERT INTO task (version, title, priority, done) VALUES (1, ?, ?, 0)", -1, &insert, NULL), db, "prepare");
  check(sqlite3_prepare_v2(db, "COMMIT", -1, &commit, NULL), db, "prepare");
  long count = 0;
  char title[64];
  double start = now(), end = start + seconds;
  while (now() < end) {
    check(sqlite3_step(begin), db, "begin"); sqlite3_reset(begin);
    snprintf(title, sizeof title, "bench raw-%ld", count);
    sqlite3_bind_text(insert, 1, title, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(insert, 2, (int)(count % 6));
    check(sqlite3_step(insert), db, "insert"); sqlite3_reset(insert);
    check(sqlite3_step(commit), db, "commit"); sqlite3_reset(commit);
    count++;
  }
  double elapsed = now() - start;
  printf("%.0f\n", count / elapsed);
  sqlite3_finalize(begin); sqlite3_finalize(insert); sqlite3_finalize(commit);
  sqlite3_close(db);
  return 0;
}
