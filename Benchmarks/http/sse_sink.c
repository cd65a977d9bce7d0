// Holds N live-query streams open and reads them as fast as they come, at the smallest cost a
// client can have (one epoll loop, reads discarded), so that a benchmark of the server with
// thousands of idle streams measures the server and not the reader: a Python asyncio reader of
// 10,000 streams takes most of a core of this two-core machine by itself.
//
//   cc -O2 -o /tmp/sse_sink Benchmarks/http/sse_sink.c
//   /tmp/sse_sink PORT COUNT PATH_PREFIX SECONDS
//
// Stream i asks for PATH_PREFIX followed by i (a distinct query each, e.g.
// "/v1/objects/Task/live?limit=10&where=title%20%3D%3D%20%22idle-" and the closing quote
// added by the sink). Prints, when SECONDS have passed: streams open, bytes and events read,
// streams the server ended. SIGUSR1 prints the same line at once (and reading goes on); SIGTERM
// prints it and ends. Loopback only.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static volatile sig_atomic_t asked = 0, stopping = 0;
static void on_signal(int number) {
    if (number == SIGTERM) stopping = 1; else asked = 1;
}

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: sse_sink PORT COUNT PATH_PREFIX SECONDS\n"); return 2; }
    int port = atoi(argv[1]), count = atoi(argv[2]);
    const char *prefix = argv[3];
    double seconds = atof(argv[4]);
    struct rlimit limit = { count + 64, count + 64 };
    setrlimit(RLIMIT_NOFILE, &limit);
    int ep = epoll_create1(0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    int open_streams = 0;
    char request[2048];
    for (int i = 0; i < count; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) { perror("connect"); return 1; }
        int n = snprintf(request, sizeof request, "GET %s%d%%22 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n", prefix, i);
        if (write(fd, request, n) != n) { perror("write"); return 1; }
        fcntl(fd, F_SETFL, O_NONBLOCK);
        struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &event);
        open_streams++;
    }
    printf("open %d\n", open_streams);
    fflush(stdout);
    long long bytes = 0, events = 0;
    int ended = 0;
    char buffer[65536];
    struct epoll_event ready[256];
    double deadline = now() + seconds;
    struct sigaction action = { .sa_handler = on_signal };
    sigaction(SIGUSR1, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    while (now() < deadline && !stopping) {
        if (asked) {
            asked = 0;
            printf("streams %d bytes %lld events %lld ended %d\n", open_streams, bytes, events, ended);
            fflush(stdout);
        }
        int n = epoll_wait(ep, ready, 256, 100);
        for (int k = 0; k < n; k++) {
            int fd = ready[k].data.fd;
            for (;;) {
                ssize_t got = read(fd, buffer, sizeof buffer);
                if (got > 0) {
                    bytes += got;
                    for (ssize_t j = 0; j + 6 < got; j++) if (buffer[j] == '\n' && memcmp(buffer + j + 1, "event:", 6) == 0) events++;
                    continue;
                }
                if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) { ended++; epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL); close(fd); }
                break;
            }
        }
    }
    printf("streams %d bytes %lld events %lld ended %d\n", open_streams, bytes, events, ended);
    return 0;
}
