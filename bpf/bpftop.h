/* Key and event layouts shared by the BPF program and bpf/program.py
 * (whose ctypes mirrors must match these field for field). */
#ifndef BPFTOP_H
#define BPFTOP_H

/* bpf_probe_read_user under another name. BCC's frontend, at every call it sees
 * to bpf_probe_read_user, builds a new kernel symbol cache (all of
 * /proc/kallsyms) to check that the kernel has the helper: 7 calls cost ~0.4 s
 * of a 1.6 s compile (bench/compile_bench.py). Kernels bpftop runs on have it
 * (5.5+); the call is the same helper either way. */
static long (*read_user)(void *dst, u32 size, const void *unsafe_ptr) =
    (void *)BPF_FUNC_probe_read_user;

/* One count per distinct (thread, user stack, kernel stack, Python stack,
 * image). A negative stack id is -errno from bpf_get_stackid (the stack could
 * not be read); python_stack_id 0: no Python frames (see python.bpf.c).
 * `image`: how many times the process had exec'd when counted (exec_counts),
 * so user space names each image's stacks from that image's mappings. */
struct sample_key {
    u32 tgid;
    u32 tid;
    s32 user_stack_id;
    s32 kernel_stack_id;
    s32 python_stack_id;
    u32 image;
};

/* Weighted probes (uretprobe latency, off-CPU time): stack ids refer to the
 * run-long `wstacks` map of the slot that counted them; `leaf_ip` (uretprobe: the probed function's entry
 * address, 0 otherwise) goes innermost on the user stack. python_stack_id
 * (offcpu: the Python frames at the block, in the run-long pywstacks{slot};
 * 0: none) is part of the identity like the native ids. */
struct wkey {
    u32 tgid;
    u32 tid;
    s32 user_stack_id;
    s32 kernel_stack_id;
    s32 python_stack_id;
    u32 image; /* as in struct sample_key */
    u64 leaf_ip;
};

struct wvalue {
    u64 count;
    u64 weight_ns;
};

/* A call in flight (uretprobe) or a thread blocked (offcpu), by tid; an
 * entry of an earlier probe epoch is ignored. */
struct pending {
    u64 start_ns;
    u64 ip;
    u32 tgid;
    s32 user_stack_id;
    s32 kernel_stack_id;
    u32 epoch;
    s32 python_stack_id; /* offcpu: see struct wkey */
    u32 pad;
};

/* -EFAULT: what bpf_get_stackid says for a kernel stack in user mode. */
#define NO_STACK_EFAULT (-14)

/* Rare events, sent through the perf buffer (never one per sample). */
#define EVENT_EXIT 1
#define EVENT_EXEC 2 /* a target exec'd: its image changed */
#define EVENT_FORK 3 /* a target forked (--children): tgid = the child, tid = its parent */
#define EVENT_LOADED 4 /* a held command's loader mapped its libraries: it is stopped */

struct event {
    u32 kind;
    u32 tgid;
    u32 tid;
    char comm[16];
    u32 image; /* EVENT_EXEC: the new image's number (exec_counts) */
};

/* Indices of the per-CPU drop counters. */
#define DROP_COUNTS_FULL 0
#define DROP_SLOTS 1

/* Slots of the `control` array: what user space changes during a run. */
#define CONTROL_STATE 0 /* bit 0: generation; bits 1..: active handler slot */
#define CONTROL_ALL_PROCESSES 1 /* 1: every process is a target (-a) */
#define CONTROL_OFFCPU_MIN_US 2 /* offcpu: ignore shorter blocks */
#define CONTROL_OFFCPU_SLOT 3   /* the slot the sched_switch handler counts for */
#define CONTROL_FOLLOW_CHILDREN 4 /* 1: a target's children become targets (--children) */
#define CONTROL_HOLD_AT_EXEC 5   /* this pid stops (SIGSTOP) right after its exec */
#define CONTROL_ENTRY_PROBES 6   /* bit s: handler slot s's on_probe_hit probes are at function
                                  * entries (uprobes; USDT probes are not) */
#define CONTROL_GIL_ONLY 7        /* 1: no samples of Python threads without the GIL (--gil) */
#define CONTROL_SLOTS 8

#endif
