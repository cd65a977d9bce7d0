// The C ceiling of a progress round: what it costs a process to send one small server-sent
// event to each of N open streams once a second, nothing else, on this machine. The server's
// own cost per round is compared with it (Benchmarks/RESULTS.md): on loopback, the sender pays
// for the receiver's wake-up too (the kernel delivers the segment inside the sender's send).
//
//   cc -O2 -o /tmp/sse_fanout_ceiling Benchmarks/http/sse_fanout_ceiling.c
//   /tmp/sse_fanout_ceiling PORT ROUNDS &      # accepts every connection, answers its GET
//   /tmp/sse_sink PORT N "/x?" SECONDS          # N streams, read as they come
//
// Once N streams are open (the first round starts when none has connected for 2 s), sends one
// chunked `event: progress` to each stream per second, ROUNDS times, and prints the process's
// CPU time (user + system) per round and per event. Loopback only.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PORT ROUNDS\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), rounds = atoi(argv[2]);
    struct rlimit limit;
    getrlimit(RLIMIT_NOFILE, &limit);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 4096) != 0) {
        perror("bind/listen");
        return 1;
    }
    fcntl(listener, F_SETFL, O_NONBLOCK);

    int capacity = 65536, count = 0;
    int *streams = calloc(capacity, sizeof(int));
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    double last_accept = now();
    // Accept until no one has connected for 2 s (after the first).
    while (count == 0 || now() - last_accept < 2) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            usleep(1000);
            continue;
        }
        char request[2048];
        // The sink sends its GET at once; the head is answered without parsing it.
        ssize_t got = recv(fd, request, sizeof request, 0);
        (void)got;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        send(fd, head, sizeof head - 1, MSG_NOSIGNAL);
        if (count < capacity) streams[count++] = fd;
        last_accept = now();
    }
    printf("streams %d\n", count);
    fflush(stdout);
    double total = 0;
    for (int round = 1; round <= rounds; round++) {
        char event[128], chunk[160];
        int length = snprintf(event, sizeof event, "event: progress\nid: %d\ndata: {\"token\":\"%d\"}\n\n", round, round);
        int framed = snprintf(chunk, sizeof chunk, "%x\r\n%s\r\n", length, event);
        double started = cpu_seconds();
        int failed = 0;
        for (int i = 0; i < count; i++) {
            if (send(streams[i], chunk, framed, MSG_NOSIGNAL | MSG_DONTWAIT) != framed) failed++;
        }
        double spent = cpu_seconds() - started;
        total += spent;
        printf("round %d: %d events, %.1f ms CPU, %.2f us an event, %d failed\n", round, count, spent * 1e3, spent * 1e6 / count, failed);
        fflush(stdout);
        sleep(1);
    }
    printf("mean: %.1f ms CPU a round, %.2f us an event\n", total * 1e3 / rounds, total * 1e6 / rounds / count);
    return 0;
}
