/* The ceiling for the HTTP benchmark: libmicrohttpd answering a fixed 200-byte JSON body,
 * with the same daemon flags as managedstore serve (epoll, internal thread pool), answering on
 * the second call so keep-alive holds. Built by run.sh; not part of the product. */
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char body[201];

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size, void **state) {
  static int marker;
  if (*state == NULL) { *state = &marker; return MHD_YES; }
  struct MHD_Response *response = MHD_create_response_from_buffer(200, body, MHD_RESPMEM_PERSISTENT);
  MHD_add_response_header(response, "Content-Type", "application/json");
  enum MHD_Result result = MHD_queue_response(connection, 200, response);
  MHD_destroy_response(response);
  return result;
}

int main(int argc, char **argv) {
  int port = argc > 1 ? atoi(argv[1]) : 18100;
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  /* {"_id":"Task/42",...} padded to exactly 200 bytes. */
  const char *start = "{\"_id\":\"Task/42\",\"_version\":3,\"title\":\"Ship the benchmark\",\"priority\":2,\"done\":false,"
                      "\"estimate\":null,\"due\":null,\"project\":\"Project/7\",\"tags\":[\"Tag/1\",\"Tag/5\"],\"note\":\"";
  size_t n = strlen(start);
  memcpy(body, start, n);
  memset(body + n, 'x', 200 - n - 2);
  memcpy(body + 198, "\"}", 2);
  body[200] = 0;
  struct MHD_Daemon *daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, port, NULL, NULL,
                                               &handler, NULL, MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)threads,
                                               MHD_OPTION_CONNECTION_LIMIT, 1024u, MHD_OPTION_END);
  if (daemon == NULL) { fprintf(stderr, "cannot start on port %d\n", port); return 1; }
  printf("ceiling server on 127.0.0.1:%d\n", port);
  fflush(stdout);
  pause();
  MHD_stop_daemon(daemon);
  return 0;
}
