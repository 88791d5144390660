/* bpftop's BPF program, compiled once per run by BCC.
 *
 * What is fixed for a run comes in as -D flags (map sizes); what can change
 * during a run (the targets, the active generation) lives in maps.
 *
 * Samples are aggregated in the kernel: counts[gen][key] += 1, with stack ids
 * from stacks[gen]. User space flips `control[0]` (the active generation)
 * each tick and then drains and clears the inactive generation's maps, so no
 * sample is lost or counted twice and the stack maps never fill up.
 *
 * Every probe kind has its handler here, so switching probes during a run is
 * attach/detach only: perf events (profile, software, hardware) run
 * on_cpu_sample; uprobes, kprobes, USDT and tracepoints run on_probe_hit /
 * on_tracepoint; uretprobe latency and off-CPU time are weighted: they add
 * count and nanoseconds to wcounts[gen], with stacks in the run-long wstacks.
 */
#include <uapi/linux/ptrace.h>
#include <uapi/linux/bpf_perf_event.h>
#include "bpftop.h"

BPF_HASH(targets, u32, u8, TARGETS_SIZE);
BPF_ARRAY(control, u32, CONTROL_SLOTS);
BPF_HASH(counts0, struct sample_key, u64, COUNTS_SIZE);
BPF_HASH(counts1, struct sample_key, u64, COUNTS_SIZE);
BPF_STACK_TRACE(stacks0, STACK_STORAGE_SIZE);
BPF_STACK_TRACE(stacks1, STACK_STORAGE_SIZE);
BPF_PERCPU_ARRAY(drops, u64, DROP_SLOTS);
BPF_PERF_OUTPUT(events);
BPF_HASH(wcounts0, struct wkey, struct wvalue, COUNTS_SIZE);
BPF_HASH(wcounts1, struct wkey, struct wvalue, COUNTS_SIZE);
BPF_STACK_TRACE(wstacks, WSTACK_STORAGE_SIZE);
BPF_HASH(calls, u32, struct pending, TARGETS_SIZE * 64);
BPF_HASH(blocked, u32, struct pending, TARGETS_SIZE * 64);

static __always_inline u32 control_get(u32 slot) {
    u32 *v = control.lookup(&slot);
    return v ? *v : 0;
}

static __always_inline int is_target(u32 tgid) {
    if (tgid == 0)
        return 0;
    return targets.lookup(&tgid) || control_get(CONTROL_ALL_PROCESSES);
}

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

/* One count for the current thread's (user, kernel) stack. */
static __always_inline int count_stack(void *regs, int has_kernel_stack) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    if (!is_target(tgid))
        return 0;

    u32 zero = 0;
    u32 *gen = control.lookup(&zero);
    u32 active = gen ? *gen : 0;
    struct sample_key key = {.tgid = tgid, .tid = (u32)id};
    key.kernel_stack_id = NO_STACK_EFAULT; /* a user-mode hit: no kernel stack */
    if (active) {
        key.user_stack_id = stacks1.get_stackid(regs, BPF_F_USER_STACK);
        if (has_kernel_stack)
            key.kernel_stack_id = stacks1.get_stackid(regs, 0);
    } else {
        key.user_stack_id = stacks0.get_stackid(regs, BPF_F_USER_STACK);
        if (has_kernel_stack)
            key.kernel_stack_id = stacks0.get_stackid(regs, 0);
    }
    add_count((void *)(u64)active, &key);
    return 0;
}

/* perf events: profile (cpu-clock), software and hardware events. */
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
    return count_stack(&ctx->regs, 1);
}

/* uprobes and USDT probes (user mode: no kernel stack). */
int on_probe_hit(struct pt_regs *ctx) {
    return count_stack(ctx, 0);
}

/* kprobes and kretprobes. */
int on_kprobe_hit(struct pt_regs *ctx) {
    return count_stack(ctx, 1);
}

/* Any tracepoint, attached by name at run time. */
int on_tracepoint(void *ctx) {
    return count_stack(ctx, 1);
}

static __always_inline void add_weight(struct wkey *key, u64 weight_ns) {
    struct wvalue zero = {}, *val;
    if (control_get(CONTROL_GENERATION))
        val = wcounts1.lookup_or_try_init(key, &zero);
    else
        val = wcounts0.lookup_or_try_init(key, &zero);
    if (val) {
        __sync_fetch_and_add(&val->count, 1);
        __sync_fetch_and_add(&val->weight_ns, weight_ns);
    } else {
        count_drop(DROP_COUNTS_FULL);
    }
}

/* uretprobe: entry of the probed function (attached as a uprobe). */
int on_call_entry(struct pt_regs *ctx) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    if (!is_target(tgid))
        return 0;
    struct pending call = {.start_ns = bpf_ktime_get_ns(), .ip = PT_REGS_IP(ctx), .tgid = tgid};
    calls.update(&tid, &call);
    return 0;
}

/* uretprobe: the return; weight = time since entry, stack = the caller's
 * plus the function itself (leaf_ip). A recursive call's outer return is not
 * counted (one call in flight per thread). */
int on_call_return(struct pt_regs *ctx) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id;
    struct pending *call = calls.lookup(&tid);
    if (!call)
        return 0;
    u64 took_ns = bpf_ktime_get_ns() - call->start_ns;
    struct wkey key = {.tgid = call->tgid, .tid = tid, .leaf_ip = call->ip};
    calls.delete(&tid);
    key.user_stack_id = wstacks.get_stackid(ctx, BPF_F_USER_STACK);
    key.kernel_stack_id = NO_STACK_EFAULT;
    add_weight(&key, took_ns);
    return 0;
}

/* offcpu: a target thread that blocks (not one preempted while runnable)
 * leaves its stacks here; when it runs again, its blocked time is added.
 * Attached only while offcpu is the active probe (detached right after load). */
TRACEPOINT_PROBE(sched, sched_switch) {
    u64 now = bpf_ktime_get_ns();
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    if ((args->prev_state & 0xff) != 0 && is_target(tgid)) {
        struct pending out = {.start_ns = now, .tgid = tgid};
        out.user_stack_id = wstacks.get_stackid(args, BPF_F_USER_STACK);
        out.kernel_stack_id = wstacks.get_stackid(args, 0);
        blocked.update(&tid, &out);
    }
    u32 next = args->next_pid;
    struct pending *was = blocked.lookup(&next);
    if (!was)
        return 0;
    u64 off_ns = now - was->start_ns;
    struct wkey key = {
        .tgid = was->tgid,
        .tid = next,
        .user_stack_id = was->user_stack_id,
        .kernel_stack_id = was->kernel_stack_id,
    };
    blocked.delete(&next);
    if (off_ns >= (u64)control_get(CONTROL_OFFCPU_MIN_US) * 1000)
        add_weight(&key, off_ns);
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
