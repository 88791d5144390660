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
 * attach/detach only (see state_for: the new probe counts before the old one
 * is detached). uretprobe latency and off-CPU time are weighted: they add
 * count and nanoseconds to wcounts[gen], with stacks in the run-long wstacks.
 */
#include <uapi/linux/ptrace.h>
#include "bpftop.h"

/* The perf-event program context, as <uapi/linux/bpf_perf_event.h> defines it
 * (stable UAPI; on x86-64 bpf_user_pt_regs_t is struct pt_regs). Defined here
 * because that header includes the kernel's <linux/ptrace.h>, which costs
 * ~4 s of every compile (bench/compile_bench.py). The asserts pin the layout
 * the kernel rewrites ctx accesses against. */
#ifndef _UAPI__LINUX_BPF_PERF_EVENT_H__
#define _UAPI__LINUX_BPF_PERF_EVENT_H__
struct bpf_perf_event_data {
    struct pt_regs regs;
    __u64 sample_period;
    __u64 addr;
};
#endif
_Static_assert(sizeof(struct pt_regs) == 21 * 8, "x86-64 struct pt_regs");
_Static_assert(__builtin_offsetof(struct bpf_perf_event_data, addr) == 22 * 8,
               "bpf_perf_event_data layout");

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
BPF_STACK_TRACE(wstacks, WSTACK_STORAGE_SIZE);   /* slot 0's */
BPF_STACK_TRACE(wstacks_1, WSTACK_STORAGE_SIZE); /* slot 1's */
BPF_HASH(calls, u32, struct pending, TARGETS_SIZE * 64);
BPF_HASH(blocked, u32, struct pending, TARGETS_SIZE * 64);
/* How many times each target has exec'd since bpftop attached (none: 0). */
BPF_HASH(exec_counts, u32, u32, TARGETS_SIZE);

static __always_inline u32 image_of(u32 tgid) {
    u32 *n = exec_counts.lookup(&tgid);
    return n ? *n : 0;
}

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
    key->image = image_of(key->tgid);
    if (map_is_gen1)
        val = counts1.lookup_or_try_init(key, &zero);
    else
        val = counts0.lookup_or_try_init(key, &zero);
    if (val)
        __sync_fetch_and_add(val, 1);
    else
        count_drop(DROP_COUNTS_FULL);
}

/* control[CONTROL_STATE]: bit 0 is the generation being filled, the other
 * bits the probe epoch (one more per switch); the epoch's low bit is the
 * handler slot that may count. Each handler exists once per slot, so a new
 * probe is attached to the idle slot's handlers and one u32 write makes it
 * count and mutes the old probe in the same instant. Returns the state, or
 * MUTED when `slot` is not the active one. */
#define MUTED 0xffffffff
#define EPOCH(state) ((state) >> 1)
static __always_inline u32 state_for(u32 slot) {
    u32 state = control_get(CONTROL_STATE);
    return (EPOCH(state) & 1) == slot ? state : MUTED;
}

/* The slot of the handler that runs. Each handler below is compiled once and
 * reads its slot here, from `slot0` (which holds 0); its slot-1 copy is the
 * same instructions reading `slot1` (user space puts 1 in it) instead
 * (bpf/retarget.py): compiling each handler twice cost every compile
 * ~0.17 CPU-s (measured there). */
BPF_ARRAY(slot0, u32, 1);
BPF_ARRAY(slot1, u32, 1);
static __always_inline u32 handler_slot(void) {
    u32 zero = 0;
    u32 *slot = slot0.lookup(&zero);
    return slot ? *slot & 1 : 0;
}

static __always_inline int weighted_stack(void *regs, u32 slot, u64 flags) {
    return slot ? wstacks_1.get_stackid(regs, flags) : wstacks.get_stackid(regs, flags);
}

static __always_inline void add_weight(u32 state, struct wkey *key, u64 weight_ns) {
    struct wvalue zero = {}, *val;
    key->image = image_of(key->tgid);
    if (state & 1)
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

/* The .eh_frame walker lives in unwind.bpf.c, which program.py appends to this
 * file (BCC rewrites map calls and finds programs only in its main file).
 * With --unwind fp it is left out (NO_WALKER: ~1 s less to compile) and
 * user stacks come from get_stackid alone. Each hook below tail-calls the
 * walker (which counts) and does not return, unless the walker is off or
 * cannot start: then the caller goes on with get_stackid.
 *
 * A tail call only reaches a program of the caller's own type (a
 * BPF_PROG_ARRAY belongs to the type of the first program loaded with it;
 * a caller of another type is refused at load, EINVAL), so the walker is
 * loaded once per program type, each copy with its own array: perf events
 * (unwind_walk), kprobe-type programs (uprobes, uretprobes, USDT, kprobes:
 * unwind_walk_kp) and tracepoints (on_tracepoint, sched_switch:
 * unwind_walk_tp; the copies are unwind_walk's instructions retargeted,
 * bpf/retarget.py). Where the user registers come from: the perf sample's or
 * the uprobe's pt_regs when they are user mode, else the task's saved user
 * registers (bpf_task_pt_regs). */
#define CTX_PERF 0       /* struct bpf_perf_event_data */
#define CTX_KPROBE 1     /* struct pt_regs (uprobe: user mode; kprobe: kernel mode) */
#define CTX_TRACEPOINT 2 /* tracepoint arguments: no registers */
#ifdef NO_WALKER
static __always_inline void unwind_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key,
                                              u32 active, u32 at_entry) {}
static __always_inline void unwind_weighted(struct pt_regs *ctx, struct wkey *key, u32 state,
                                            u32 slot, u64 weight_ns) {}
static __always_inline void unwind_blocked(void *ctx, struct pending *out, u32 tid, u32 slot) {}
static __always_inline void unwind_fork(u32 parent, u32 child) {}
static __always_inline void unwind_exec(u32 tgid, u32 wake) {}
#else
static __always_inline void unwind_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key,
                                              u32 active, u32 at_entry);
static __always_inline void unwind_weighted(struct pt_regs *ctx, struct wkey *key, u32 state,
                                            u32 slot, u64 weight_ns);
static __always_inline void unwind_blocked(void *ctx, struct pending *out, u32 tid, u32 slot);
static __always_inline void unwind_fork(u32 parent, u32 child);
static __always_inline void unwind_exec(u32 tgid, u32 wake);
#endif

/* uretprobe: entry of the probed function (attached as a uprobe). */
static __always_inline int call_entry(struct pt_regs *ctx, u32 slot) {
    u32 state = state_for(slot);
    if (state == MUTED)
        return 0;
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    if (!is_target(tgid))
        return 0;
    struct pending call = {
        .start_ns = bpf_ktime_get_ns(), .ip = PT_REGS_IP(ctx), .tgid = tgid, .epoch = EPOCH(state)};
    calls.update(&tid, &call);
    return 0;
}

/* uretprobe: the return; weight = time since entry, stack = the caller's
 * plus the function itself (leaf_ip). A recursive call's outer return is not
 * counted (one call in flight per thread). */
static __always_inline int call_return(struct pt_regs *ctx, u32 slot) {
    u32 state = state_for(slot);
    if (state == MUTED)
        return 0;
    u64 id = bpf_get_current_pid_tgid();
    u32 tid = (u32)id;
    struct pending *call = calls.lookup(&tid);
    if (!call || call->epoch != EPOCH(state)) /* none, or an earlier probe's */
        return 0;
    u64 took_ns = bpf_ktime_get_ns() - call->start_ns;
    struct wkey key = {.tgid = call->tgid, .tid = tid, .leaf_ip = call->ip};
    calls.delete(&tid);
    key.kernel_stack_id = NO_STACK_EFAULT;
    unwind_weighted(ctx, &key, state, slot, took_ns); /* walks and counts, unless fp */
    key.user_stack_id = weighted_stack(ctx, slot, BPF_F_USER_STACK);
    add_weight(state, &key, took_ns);
    return 0;
}

/* The Python frame walker lives in python.bpf.c, appended after the walker's
 * file: for a Python process it tail-calls away, records the Python frames
 * and then calls count_user_stack() itself. */
#ifdef NO_PYTHON
static __always_inline int python_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key,
                                             u32 active, u32 at_entry) {
    return 0;
}
static __always_inline void python_blocked(void *ctx, struct pending *out, u32 tid, u32 slot) {}
static __always_inline void python_fork(u32 parent, u32 child) {}
#else
static __always_inline int python_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key,
                                             u32 active, u32 at_entry);
static __always_inline void python_blocked(void *ctx, struct pending *out, u32 tid, u32 slot);
static __always_inline void python_fork(u32 parent, u32 child);
#endif

/* The user stack of a sample whose other stacks are in `key`, then its count:
 * walked from .eh_frame (unwind_user_stack tail-calls away and counts) unless
 * --unwind fp, else get_stackid. */
static __always_inline void count_user_stack(void *regs, u32 ctx_kind, struct sample_key *key,
                                             u32 active, u32 at_entry) {
    unwind_user_stack(regs, ctx_kind, key, active, at_entry);
    if (active)
        key->user_stack_id = stacks1.get_stackid(regs, BPF_F_USER_STACK);
    else
        key->user_stack_id = stacks0.get_stackid(regs, BPF_F_USER_STACK);
    add_count((void *)(u64)active, key);
}

/* One count for the current thread's (user, kernel) stack; `ctx_kind` says
 * what `regs` is (CTX_*). A uprobe hit is at a function's first instruction
 * (CONTROL_ENTRY_PROBES): its caller's return address is on top of the stack,
 * table or not. Samples, probe hits and tracepoint hits of a Python process
 * go by the Python walker. */
static __always_inline int count_stack(void *regs, u32 ctx_kind, int has_kernel_stack, u32 slot) {
    u32 state = state_for(slot);
    if (state == MUTED)
        return 0;
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    if (!is_target(tgid))
        return 0;

    u32 active = state & 1;
    struct sample_key key = {.tgid = tgid, .tid = (u32)id};
    key.kernel_stack_id = NO_STACK_EFAULT; /* a user-mode hit: no kernel stack */
    if (has_kernel_stack)
        key.kernel_stack_id = active ? stacks1.get_stackid(regs, 0) : stacks0.get_stackid(regs, 0);
    u32 at_entry = 0;
    if (ctx_kind == CTX_KPROBE && !has_kernel_stack)
        at_entry = (control_get(CONTROL_ENTRY_PROBES) >> slot) & 1;
    /* The thread's Python frames, if it has any (1: --gil, and it has not the GIL). */
    if (python_user_stack(regs, ctx_kind, &key, active, at_entry))
        return 0;
    count_user_stack(regs, ctx_kind, &key, active, at_entry);
    return 0;
}

/* first_ns (per CPU): when a perf-event handler first ran on this CPU, before
 * any filtering. User space's compile-free perf_event sampler keeps its samples
 * on a CPU from before this time and BPF counts from it: no gap, no overlap. */
BPF_PERCPU_ARRAY(first_ns, u64, 1);
static __always_inline void note_first_sample(void) {
    u32 zero = 0;
    u64 *first = first_ns.lookup(&zero);
    if (first && *first == 0)
        *first = bpf_ktime_get_ns();
}

/* The handlers (slot 0's; each has a slot-1 copy named NAME_1, see
 * handler_slot). perf events (profile, software, hardware):
 * on_cpu_sample; uprobes and USDT (user mode: no kernel stack): on_probe_hit;
 * kprobes: on_kprobe_hit; any tracepoint attached by name: on_tracepoint;
 * uretprobe: on_call_entry + on_call_return. */
int on_cpu_sample(struct bpf_perf_event_data *ctx) {
    note_first_sample();
    return count_stack(ctx, CTX_PERF, 1, handler_slot());
}
int on_probe_hit(struct pt_regs *ctx) { return count_stack(ctx, CTX_KPROBE, 0, handler_slot()); }
int on_kprobe_hit(struct pt_regs *ctx) { return count_stack(ctx, CTX_KPROBE, 1, handler_slot()); }
int on_tracepoint(void *ctx) { return count_stack(ctx, CTX_TRACEPOINT, 1, handler_slot()); }
int on_call_entry(struct pt_regs *ctx) { return call_entry(ctx, handler_slot()); }
int on_call_return(struct pt_regs *ctx) { return call_return(ctx, handler_slot()); }

/* offcpu: a target thread that blocks (not one preempted while runnable)
 * leaves its stacks here (a Python thread also its Python frames at the
 * block, kept until the wake-up); when it runs again, its blocked time is added.
 * One copy only (BCC names it after the tracepoint): its slot is in
 * control[CONTROL_OFFCPU_SLOT]. Detached right after load; attached while
 * offcpu is a probe. */
TRACEPOINT_PROBE(sched, sched_switch) {
    u32 slot = control_get(CONTROL_OFFCPU_SLOT);
    u32 state = state_for(slot);
    if (state == MUTED)
        return 0;
    u64 now = bpf_ktime_get_ns();
    u32 next = args->next_pid;
    struct pending *was = blocked.lookup(&next);
    if (was && was->epoch == EPOCH(state)) { /* not an earlier probe's */
        u64 off_ns = now - was->start_ns;
        struct wkey key = {
            .tgid = was->tgid,
            .tid = next,
            .user_stack_id = was->user_stack_id,
            .kernel_stack_id = was->kernel_stack_id,
            .python_stack_id = was->python_stack_id,
        };
        blocked.delete(&next);
        if (off_ns >= (u64)control_get(CONTROL_OFFCPU_MIN_US) * 1000)
            add_weight(state, &key, off_ns);
    }
    /* Last, as the walker does not come back: the thread leaving the CPU. */
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32, tid = (u32)id;
    if ((args->prev_state & 0xff) == 0 || !is_target(tgid))
        return 0;
    struct pending out = {.start_ns = now, .tgid = tgid, .epoch = EPOCH(state)};
    out.kernel_stack_id = weighted_stack(args, slot, 0);
    python_blocked(args, &out, tid, slot); /* a Python thread: walks its frames, then on as below */
    unwind_blocked(args, &out, tid, slot); /* walks and stores, unless fp */
    out.user_stack_id = weighted_stack(args, slot, BPF_F_USER_STACK);
    blocked.update(&tid, &out);
    return 0;
}

static __always_inline void send_event(void *ctx, u32 kind, u32 tgid, u32 tid) {
    struct event ev = {.kind = kind, .tgid = tgid, .tid = tid};
    bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
    events.perf_submit(ctx, &ev, sizeof(ev));
}

/* A command bpftop launched, held at its exec and again once the loader has
 * mapped its libraries, before any of their code runs (their code has no
 * unwind table in the walker until user space reads the maps; stopped there,
 * a program that throws in its first millisecond is walked whole). The
 * loader (ld.so) calls _dl_debug_state, a debugger's hook, before it maps
 * the program's libraries and again once they are mapped (glibc's dl_main):
 * loader_ready is attached there, for every process (a uprobe on the file),
 * and stops a held command at its LOADER_CALLS-th call after the exec.
 * tgid -> calls still to come. */
#define LOADER_CALLS 2
BPF_HASH(loader_holds, u32, u32, 64);

int loader_ready(struct pt_regs *ctx) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    u32 *left = loader_holds.lookup(&tgid);
    if (!left)
        return 0;
    if (*left > 1) {
        *left -= 1;
        return 0;
    }
    loader_holds.delete(&tgid);
    bpf_send_signal(19); /* SIGSTOP */
    unwind_exec(tgid, 1); /* wakes user space (the walker's new entry comes from it) */
    struct event ev = {.kind = EVENT_LOADED, .tgid = tgid, .tid = (u32)id, .image = image_of(tgid)};
    bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
    events.perf_submit(ctx, &ev, sizeof(ev));
    return 0;
}

/* A target exec'd: user space re-reads its maps at once. A command bpftop
 * launched stops here, before its new image runs, until its maps are read. */
TRACEPOINT_PROBE(sched, sched_process_exec) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    /* Any process (-a too): its old mappings are stale. A target's exec also
     * wakes user space, which reads the new image's maps while it runs. */
    u32 target = targets.lookup(&tgid) != 0;
    u32 all = control_get(CONTROL_ALL_PROCESSES);
    unwind_exec(tgid, target || all);
    if (!target && !all)
        return 0;
    u32 image = image_of(tgid) + 1; /* counts from now on are the new image's */
    exec_counts.update(&tgid, &image);
    if (!target)
        return 0;
    loader_holds.delete(&tgid);
    if (control_get(CONTROL_HOLD_AT_EXEC) == tgid) {
        u32 slot = CONTROL_HOLD_AT_EXEC, none = 0, calls = LOADER_CALLS;
        control.update(&slot, &none);
        loader_holds.update(&tgid, &calls);
        bpf_send_signal(19); /* SIGSTOP */
    }
    struct event ev = {.kind = EVENT_EXEC, .tgid = tgid, .tid = (u32)id, .image = image};
    bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
    events.perf_submit(args, &ev, sizeof(ev));
    return 0;
}

/* --children: a target's new task becomes a target before it runs (a new
 * thread also lands here; user space drops it again, its tgid is a target). */
TRACEPOINT_PROBE(sched, sched_process_fork) {
    u32 tgid = bpf_get_current_pid_tgid() >> 32;
    if (!control_get(CONTROL_FOLLOW_CHILDREN) || !targets.lookup(&tgid))
        return 0;
    u32 child = args->child_pid;
    u8 one = 1;
    targets.update(&child, &one);
    unwind_fork(tgid, child);
    python_fork(tgid, child);
    send_event(args, EVENT_FORK, child, tgid);
    return 0;
}

/* Thread exits of a target; user space decides whether the process is gone. */
TRACEPOINT_PROBE(sched, sched_process_exit) {
    u64 id = bpf_get_current_pid_tgid();
    u32 tgid = id >> 32;
    if ((u32)id == tgid)
        exec_counts.delete(&tgid); /* (its counts carry their image already) */
    if (!targets.lookup(&tgid))
        return 0;
    struct event ev = {.kind = EVENT_EXIT, .tgid = tgid, .tid = (u32)id};
    bpf_get_current_comm(&ev.comm, sizeof(ev.comm));
    events.perf_submit(args, &ev, sizeof(ev));
    return 0;
}
