/* The ceiling for durable writes over HTTP: the least a server built like managedstore's write
 * path can do per POST, in C. libmicrohttpd with the same daemon flags as managedstore serve
 * (epoll, internal thread pool, suspend/resume) takes each POST, suspends its connection and
 * queues it; one writer thread takes everything queued as one group, INSERTs one row per request
 * (no JSON parsing: the body is stored as the title) in one transaction, COMMITs with
 * synchronous=FULL, then resumes the connections, which answer 201 with a fixed 200-byte body.
 * No validation, no managed objects, no JSON: whatever managedstore does on top of this costs more.
 *
 *   write_ceiling PORT STORE [handoff|row|store]
 *
 * handoff: no SQL at all, the writer only hands each group back (the cost of the hand-off alone).
 * row (the default): one INSERT per request into a table of its own (title, priority).
 * store: STORE is a managedstore store (made by `managedstore demo`), and each request runs the
 *   statements managedstore runs for a POST of a Task: a savepoint, the key read and moved on in
 *   _sequence, the history transaction and change rows, the Task row with its indexes.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { body_limit = 1024 };

struct request {
  char body[body_limit];
  size_t length;
  int queued;
  struct MHD_Connection *connection;
  struct request *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static struct request *queue_head;
static struct request **queue_tail = &queue_head;
static sqlite3 *db;
enum mode { handoff, row, store };
static enum mode mode = row;
static sqlite3_stmt *insert, *savepoint, *release, *read_key, *move_key, *transaction, *change;
static char answer[201];

static void check(int rc, const char *what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE) { fprintf(stderr, "%s: %s\n", what, sqlite3_errmsg(db)); exit(1); }
}

static void run(sqlite3_stmt *statement, const char *what) {
  check(sqlite3_step(statement), what);
  sqlite3_reset(statement);
}

static void insert_row(struct request *r) {
  sqlite3_bind_text(insert, 1, r->body, (int)r->length, SQLITE_STATIC);
  sqlite3_bind_int(insert, 2, (int)(r->length % 6));
  run(insert, "insert");
}

/* What managedstore's ChangeSetWriter runs for one POST of a Task (see the file comment). */
static void insert_task(struct request *r) {
  run(savepoint, "savepoint");
  if (sqlite3_step(read_key) != SQLITE_ROW) check(SQLITE_ERROR, "read key");
  sqlite3_int64 pk = sqlite3_column_int64(read_key, 0) + 1;
  sqlite3_reset(read_key);
  sqlite3_bind_int64(move_key, 1, pk);
  run(move_key, "move key");
  sqlite3_bind_double(transaction, 1, 1.8e9);
  run(transaction, "history transaction");
  sqlite3_int64 token = sqlite3_last_insert_rowid(db);
  sqlite3_bind_int64(change, 1, token);
  sqlite3_bind_int64(change, 2, pk);
  run(change, "history change");
  sqlite3_bind_int64(insert, 1, pk);
  sqlite3_bind_text(insert, 2, r->body, (int)r->length, SQLITE_STATIC);
  sqlite3_bind_int(insert, 3, (int)(r->length % 6));
  sqlite3_bind_int64(insert, 4, token);
  run(insert, "insert");
  run(release, "release");
}

static void prepare(const char *sql, sqlite3_stmt **statement) {
  check(sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, statement, NULL), sql);
}

static void *writer(void *unused) {
  (void)unused;
  for (;;) {
    pthread_mutex_lock(&lock);
    while (queue_head == NULL) pthread_cond_wait(&work, &lock);
    struct request *group = queue_head;
    queue_head = NULL;
    queue_tail = &queue_head;
    pthread_mutex_unlock(&lock);
    if (mode != handoff) {
      check(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), "begin");
      for (struct request *r = group; r != NULL; r = r->next) (mode == row ? insert_row : insert_task)(r);
      check(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), "commit");
    }
    for (struct request *r = group, *next; r != NULL; r = next) {
      next = r->next; /* r may be freed once its connection is resumed */
      MHD_resume_connection(r->connection);
    }
  }
  return NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
  (void)cls; (void)url; (void)method; (void)version;
  struct request *r = *state;
  if (r == NULL) {
    r = calloc(1, sizeof *r);
    r->connection = connection;
    *state = r;
    return MHD_YES;
  }
  if (*upload_data_size > 0) {
    size_t room = body_limit - r->length, n = *upload_data_size < room ? *upload_data_size : room;
    memcpy(r->body + r->length, upload_data, n);
    r->length += n;
    *upload_data_size = 0;
    return MHD_YES;
  }
  if (!r->queued) {
    r->queued = 1;
    MHD_suspend_connection(connection);
    pthread_mutex_lock(&lock);
    *queue_tail = r;
    queue_tail = &r->next;
    pthread_cond_signal(&work);
    pthread_mutex_unlock(&lock);
    return MHD_YES;
  }
  struct MHD_Response *response = MHD_create_response_from_buffer(200, answer, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(response, "Content-Type", "application/json");
  enum MHD_Result result = MHD_queue_response(connection, 201, response);
  MHD_destroy_response(response);
  return result;
}

static void completed(void *cls, struct MHD_Connection *connection, void **state, enum MHD_RequestTerminationCode code) {
  (void)cls; (void)connection; (void)code;
  free(*state);
  *state = NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "usage: write_ceiling PORT STORE [nosql]\n"); return 2; }
  int port = atoi(argv[1]);
  if (argc > 3) mode = strcmp(argv[3], "handoff") == 0 ? handoff : strcmp(argv[3], "store") == 0 ? store : row;
  memset(answer, 'x', 200);
  memcpy(answer, "{\"_id\":\"Task/1\",\"note\":\"", 24);
  memcpy(answer + 198, "\"}", 2);
  check(sqlite3_open(argv[2], &db), "open");
  check(sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL", NULL, NULL, NULL), "pragmas");
  if (mode == store) {
    prepare("SAVEPOINT w", &savepoint);
    prepare("RELEASE w", &release);
    prepare("SELECT \"max\" FROM \"_sequence\" WHERE \"entity\" = 'Task'", &read_key);
    prepare("UPDATE \"_sequence\" SET \"max\" = ?1 WHERE \"entity\" = 'Task'", &move_key);
    prepare("INSERT INTO \"_history_transaction\" (\"timestamp\", \"author\", \"context\") VALUES (?, NULL, 'writer')", &transaction);
    prepare("INSERT INTO \"_history_change\" (\"token\", \"entity\", \"pk\", \"type\", \"version\", \"properties\", \"previous\", "
            "\"prior\") VALUES (?1, 'Task', ?2, 1, 1, NULL, NULL, (SELECT \"_history\" FROM \"Task\" WHERE \"_pk\" = ?2))", &change);
    prepare("INSERT INTO \"Task\" (\"_pk\", \"_version\", \"title\", \"priority\", \"done\", \"estimate\", \"due\", \"project\", "
            "\"_history\") VALUES (?1, 1, ?2, ?3, 0, NULL, NULL, NULL, ?4)", &insert);
  } else if (mode == row) {
    check(sqlite3_exec(db, "CREATE TABLE IF NOT EXISTS task(id INTEGER PRIMARY KEY, title TEXT, priority INTEGER)", NULL, NULL,
                       NULL), "schema");
    prepare("INSERT INTO task(title, priority) VALUES (?, ?)", &insert);
  }
  pthread_t thread;
  pthread_create(&thread, NULL, writer, NULL);
  struct MHD_Daemon *daemon = MHD_start_daemon(
      MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, (uint16_t)port, NULL,
      NULL, &handler, NULL, MHD_OPTION_THREAD_POOL_SIZE, 4u, MHD_OPTION_CONNECTION_LIMIT, 1024u,
      MHD_OPTION_NOTIFY_COMPLETED, &completed, NULL, MHD_OPTION_END);
  if (daemon == NULL) { fprintf(stderr, "cannot start on port %d\n", port); return 1; }
  printf("write ceiling on 127.0.0.1:%d (%s)\n", port, mode == handoff ? "hand-off only" : mode == row ? "one row per request" : "managedstore's statements");
  fflush(stdout);
  pause();
  return 0;
}
