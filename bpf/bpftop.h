/* Key and event layouts shared by the BPF program and bpf/program.py
 * (whose ctypes mirrors must match these field for field). */
#ifndef BPFTOP_H
#define BPFTOP_H

/* One count per distinct (thread, user stack, kernel stack). A negative
 * stack id is -errno from bpf_get_stackid (the stack could not be read). */
struct sample_key {
    u32 tgid;
    u32 tid;
    s32 user_stack_id;
    s32 kernel_stack_id;
};

/* Rare events, sent through the perf buffer (never one per sample). */
#define EVENT_EXIT 1

struct event {
    u32 kind;
    u32 tgid;
    u32 tid;
    char comm[16];
};

/* Indices of the per-CPU drop counters. */
#define DROP_COUNTS_FULL 0
#define DROP_SLOTS 1

#endif
