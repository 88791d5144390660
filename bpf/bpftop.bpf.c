/* bpftop's BPF program, compiled once per run by BCC.
 *
 * What is fixed for a run comes in as -D flags (map sizes); what can change
 * during a run (the targets, the active generation) lives in maps.
 *
 * Samples are aggregated in the kernel: counts[gen][key] += 1, with stack ids
 * from stacks[gen]. User space flips `control[0]` (the active generation)
 * each tick and then drains and clears the inactive generation's maps, so no
 * sample is lost or counted twice and the stack maps never fill up.
 */
#include <uapi/linux/ptrace.h>
#include <uapi/linux/bpf_perf_event.h>
#include "bpftop.h"

BPF_HASH(targets, u32, u8, TARGETS_SIZE);
BPF_ARRAY(control, u32, 1);
BPF_HASH(counts0, struct sample_key, u64, COUNTS_SIZE);
BPF_HASH(counts1, struct sample_key, u64, COUNTS_SIZE);
BPF_STACK_TRACE(stacks0, STACK_STORAGE_SIZE);
BPF_STACK_TRACE(stacks1, STACK_STORAGE_SIZE);
BPF_PERCPU_ARRAY(drops, u64, DROP_SLOTS);
BPF_PERF_OUTPUT(events);

static __always_inline void count_drop(u32 slot) {
    u64 *n = drops.lookup(&slot);
    if (n)
        (*n)++;
}

static __always_inline void add_count(void *map_is_gen1, struct sample_key *key) {
    u64 zero = 0, *val;
    if (map_is_gen1)
        val = counts1.lookup_or_try_init(key, &zero);
    else
        val = counts0.lookup_or_try_init(key, &zero);
    if (val)
        __sync_fetch_and_add(val, 1);
    else
        count_drop(DROP_COUNTS_FULL);
}

/* The .eh_frame walker lives in unwind.bpf.c, which program.py appends to this
 * file (BCC rewrites map calls and finds programs only in its main file). */
static __always_inline void unwind_user_stack(struct bpf_perf_event_data *ctx,
                                              struct sample_key *key, u32 active);

int on_cpu_sample(struct bpf_perf_event_data *ctx) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    if (tgid == 0 || !targets.lookup(&tgid))
        return 0;

    u32 zero = 0;
    u32 *gen = control.lookup(&zero);
    u32 active = gen ? *gen : 0;
    struct sample_key key = {.tgid = tgid, .tid = (u32)id};
    if (active)
        key.kernel_stack_id = stacks1.get_stackid(&ctx->regs, 0);
    else
        key.kernel_stack_id = stacks0.get_stackid(&ctx->regs, 0);
    unwind_user_stack(ctx, &key, active); /* .eh_frame walk: tail-calls away unless --unwind fp */
    if (active)
        key.user_stack_id = stacks1.get_stackid(&ctx->regs, BPF_F_USER_STACK);
    else
        key.user_stack_id = stacks0.get_stackid(&ctx->regs, BPF_F_USER_STACK);
    add_count((void *)(u64)active, &key);
    return 0;
}

/* Thread exits of a target; user space decides whether the process is gone. */
TRACEPOINT_PROBE(sched, sched_process_exit) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    if (!targets.lookup(&tgid))
        return 0;
    struct event ev = {.kind = EVENT_EXIT, .tgid = tgid, .tid = (u32)id};
    bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
    events.perf_submit(args, &ev, sizeof(ev));
    return 0;
}
