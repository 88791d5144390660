/* The demo workload: a toy "server" with a known hot path, plus a background
 * thread. The main thread spends most of its time in
 * serve -> handle_request -> hash_payload (-> mix_round), then parse_headers
 * and render_response, and some in the kernel through log_line -> write(2);
 * the "compressor" thread spins briefly in compress_block and sleeps.
 * Usage: demo [SECONDS] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>
#include "common.h"

__attribute__((noinline)) void mix_round(void) { KEEP_FRAME(); SPIN(35); }
__attribute__((noinline)) void hash_payload(void) { KEEP_FRAME(); SPIN(20); mix_round(); }
__attribute__((noinline)) void parse_headers(void) { KEEP_FRAME(); SPIN(25); }
__attribute__((noinline)) void render_response(void) { KEEP_FRAME(); SPIN(10); }

__attribute__((noinline)) void log_line(int fd) {
    KEEP_FRAME();
    static char line[2048];
    for (int i = 0; i < 32; i++) {
        if (write(fd, line, sizeof line) < 0) return;
    }
}

__attribute__((noinline)) void handle_request(int fd) {
    KEEP_FRAME();
    parse_headers();
    hash_payload();
    render_response();
    log_line(fd);
}

__attribute__((noinline)) void serve(int fd, struct run_limit *lim) {
    KEEP_FRAME();
    for (long round = 0; !limit_reached(lim, round); round++) handle_request(fd);
}

__attribute__((noinline)) void compress_block(void) { KEEP_FRAME(); SPIN(10); usleep(3000); }

static void *compressor(void *arg) {
    (void)arg;
    for (;;) compress_block();
    return NULL;
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0) return 1;
    pthread_t tid;
    pthread_create(&tid, NULL, compressor, NULL);
    pthread_setname_np(tid, "compressor");
    serve(fd, &lim);
    return 0;
}
