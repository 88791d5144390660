/* main -> churn -> write(2) to /dev/null in a loop: most time is in the kernel.
 * Usage: syscalls [SECONDS] */
#include <fcntl.h>
#include <unistd.h>
#include "common.h"

__attribute__((noinline)) void churn(int fd, struct run_limit *lim) {
    KEEP_FRAME();
    static char buf[4096];
    for (long round = 0; !limit_reached(lim, round); round++) {
        for (int i = 0; i < 64; i++) {
            if (write(fd, buf, sizeof buf) < 0) return;
        }
    }
}

int main(int argc, char **argv) {
    struct run_limit lim = parse_limit(argc, argv);
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0) return 1;
    churn(fd, &lim);
    return 0;
}
