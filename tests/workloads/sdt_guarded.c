/* The semaphore-guarded probe of the sdt workload (see sdt.c). */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>
#include "common.h"

/* The name <sys/sdt.h> gives provider "sdt", probe "guarded"; tracers raise it. */
volatile unsigned short sdt_guarded_semaphore __attribute__((used, section(".probes")));

/* 1 when the probe fired (the semaphore was raised), else 0. */
__attribute__((noinline)) long guarded_site(long i) {
    KEEP_FRAME();
    if (!sdt_guarded_semaphore) return 0;
    STAP_PROBE1(sdt, guarded, i);
    return 1;
}
