/* In-kernel unwinding of user stacks from .eh_frame tables
 * (tests/bpf/test_unwind.py checks its stacks against perf's;
 * bench/unwind_cost.py measures its cost per sample).
 *
 * Appended to bpftop.bpf.c by program.py (BCC rewrites map calls only in its
 * main file), so its maps, add_count() and struct sample_key are in scope;
 * bpftop.bpf.c declares the hooks ahead: unwind_user_stack() (a count: CPU
 * samples, uprobes, USDT, kprobes, tracepoints), unwind_weighted() (a
 * uretprobe's return) and unwind_blocked() (offcpu). Unless the mode is "fp",
 * a hook stores what the walk is for and the user registers in a per-CPU
 * scratch slot and tail-calls the walker of its program type (unwind_walk,
 * or its copies unwind_walk_kp, unwind_walk_tp: a tail call stays within one
 * type; the copies are made from unwind_walk's instructions), which
 * walks UNWIND_FRAMES_PER_CALL frames and tail-calls
 * itself until the stack ends or UNWIND_MAX_FRAMES are taken (a plain bounded
 * loop costs ~13k verified instructions per frame, so it hits the verifier's
 * 1M-instruction limit at ~60 frames; bpf_loop is unusable from BCC 0.26,
 * which emits its callback as a plain 0). The walked return addresses go into
 * a deduplicating stack store (ustacks0/1, one per generation like
 * stacks0/1) under an id of 30 hash bits plus WALKER_ID_BIT (so the drain
 * tells them from get_stackid's ids); the full hash is kept in the entry, so
 * a collision is counted as an error (-EEXIST), never misattributed. Only
 * return addresses leave the kernel: no stack memory.
 *
 * Per frame: find the process's mapping of the pc (unwind_procs[tgid],
 * sorted; the previous frame's when it still holds the pc, else a binary
 * search), then the row of its table (unwind_rows, one shared array; each
 * file's rows sorted by pc): its bucket in the file's index (unwind_index)
 * bounds a binary search to a few rows. Rows say CFA = rsp or
 * rbp + off, RA at CFA + ra_off, caller's rbp at CFA + rbp_off (0: unchanged).
 * Code without a table (no mapping entry yet, a GAP row) falls back to the
 * frame pointer in "auto" mode and ends the stack in "dwarf" mode. Callers are
 * looked up at pc - 1 (a return address may lie past its caller's FDE).
 * The row kinds mirror symbols/unwind/table.py's RowKind.
 */

#define UNWIND_MODE_FP 0
#define UNWIND_MODE_DWARF 1
#define UNWIND_MODE_AUTO 2

#define ROW_GAP 0
#define ROW_RSP 1
#define ROW_RBP 2
#define ROW_STOP 3
#define ROW_UNSUPPORTED 4
#define ROW_PLT 5
#define ROW_SIGNAL 6

#define UNWIND_MAX_FRAMES 128          /* power of two */
/* The verifier's work per walker program grows with the frames per call: 16
 * cost 0.29 CPU-s to verify the walker and its two copies, 8 cost 0.15
 * (time.process_time around each load, medians of 3), at no cost per sample
 * that bench/unwind_cost.py can tell (16 tail calls for 128 frames; with the
 * Python walker's 4 before them, within the kernel's limit of 33). */
#ifndef UNWIND_FRAMES_PER_CALL
#define UNWIND_FRAMES_PER_CALL 8
#endif
#define UNWIND_MAX_MAPPINGS 256        /* power of two */
#define UNWIND_MAPPING_STEPS 9         /* log2(UNWIND_MAX_MAPPINGS) + 1 */
#define UNWIND_ROW_STEPS 22            /* enough for 2^21 rows per file */
#define UNWIND_EXACT_PC 1              /* the next pc is not a return address */
#define WALKER_ID_BIT 0x40000000       /* walker stack ids; get_stackid's are below */

/* The ucontext at rsp in a signal trampoline (__restore_rt). */
#define SIGFRAME_RBP 120
#define SIGFRAME_RSP 160
#define SIGFRAME_RIP 168

#ifndef UNWIND_ROWS_SIZE
#define UNWIND_ROWS_SIZE 1048576
#endif
/* A file's row index has at most one bucket per UNWIND_ROWS_PER_BUCKET rows. */
#define UNWIND_ROWS_PER_BUCKET 4
#define UNWIND_INDEX_SIZE (UNWIND_ROWS_SIZE / UNWIND_ROWS_PER_BUCKET + 2)

struct unwind_row {
    u32 pc;          /* ELF virtual address */
    s32 cfa_off;
    s16 rbp_off;
    s16 ra_off;
    u8 kind;
    u8 arg;          /* PLT: the (pc & 15) threshold */
    u8 pad[2];
};

struct unwind_mapping {
    u64 start;
    u64 end;
    u64 bias;        /* address - ELF vaddr */
    u32 rows_start;
    u32 rows_len;    /* 0: no table (yet) */
    u32 index_start; /* the file's row index in unwind_index */
    u32 buckets;     /* 0: no index, search all rows */
    u32 first_pc;    /* ELF vaddr of bucket 0 (the first row's) */
    u32 shift;       /* log2 of a bucket's bytes of code */
};

struct unwind_proc {
    u32 count;
    u32 pad;
    struct unwind_mapping maps[UNWIND_MAX_MAPPINGS];
};

/* How a walk went, in struct ustack's flags (bpf/unwinder.py reads them).
 * The low byte: 1 + the index of the first frame whose caller was sought by
 * the frame pointer because its pc lay in none of the process's described
 * mappings (code mapped after the description, or JIT code: user space tells
 * them apart by the maps); 0: none. USTACK_FP_END: the last frame's caller
 * was sought by the frame pointer (no table there, or none yet for the
 * process), so the walk ends where frame pointers end (main's caller, a
 * thread's start_thread), short of the entry a table walk reaches. */
#define USTACK_FP_FROM_MASK 0xff
#define USTACK_FP_END 0x100

struct ustack {
    u64 hash;
    u32 len;
    u32 flags;
    u64 addrs[UNWIND_MAX_FRAMES];
};

/* What the walk is for (where unwind_finish puts its stack). */
#define UNWIND_COUNT 0   /* one count: key into counts{active}, stack into ustacks{active} */
#define UNWIND_WEIGHT 1  /* uretprobe: (key, leaf_ip) += weight into wcounts{active} */
#define UNWIND_BLOCKED 2 /* offcpu: blocked[key.tid] = the thread leaving the CPU */

struct unwind_state {
    struct sample_key key;
    u32 active;      /* the generation counted into */
    u32 mode;
    u32 flags;
    u32 mapping;     /* index of the previous frame's mapping (a guess) */
    u32 kind;        /* UNWIND_COUNT/WEIGHT/BLOCKED */
    u32 slot;        /* WEIGHT/BLOCKED: the handler slot (its run-long store uwstacks{slot}) */
    u32 epoch;       /* BLOCKED: the probe epoch */
    u32 at_entry;    /* 1: the first pc is a function's first instruction (a uprobe) */
    u64 leaf_ip;     /* WEIGHT: the probed function */
    u64 weight;      /* WEIGHT: ns; BLOCKED: when it blocked */
    u64 pc;
    u64 sp;
    u64 bp;
    struct ustack stack;
};

BPF_ARRAY(unwind_mode, u32, 1);
BPF_ARRAY(unwind_rows, struct unwind_row, UNWIND_ROWS_SIZE);
/* Per file, for each bucket of code (and one past the last), the file's row
 * in force at the bucket's first byte: a pc's row is between those of its
 * bucket and the next, so the search covers a few rows instead of all. */
BPF_ARRAY(unwind_index, u32, UNWIND_INDEX_SIZE);
BPF_F_TABLE("hash", u32, struct unwind_proc, unwind_procs, TARGETS_SIZE, BPF_F_NO_PREALLOC);
BPF_PERCPU_ARRAY(unwind_scratch, struct unwind_state, 1);
BPF_F_TABLE("hash", u32, struct ustack, ustacks0, STACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_F_TABLE("hash", u32, struct ustack, ustacks1, STACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
/* Weighted probes' walked stacks, run-long per handler slot like wstacks: an
 * offcpu entry waits in `blocked` across drains. */
BPF_F_TABLE("hash", u32, struct ustack, uwstacks0, WSTACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_F_TABLE("hash", u32, struct ustack, uwstacks1, WSTACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
/* One walker per program type (see bpftop.bpf.c): perf events, kprobe-type
 * programs (uprobes, USDT, kprobes), tracepoints. */
BPF_PROG_ARRAY(unwind_progs, 1);
BPF_PROG_ARRAY(unwind_progs_kp, 1);
BPF_PROG_ARRAY(unwind_progs_tp, 1);
/* The tgid of each process that exec'd while it had an entry, and of each
 * target that exec'd (its new image's maps are read at once): wakes the feed
 * at once (bpf/unwinder.py, Unwinder.wait_execs), so the new image's samples
 * use frame pointers for ~1 ms, not until a poll notices the exec. Full (a
 * burst of 256 execs not read yet): that exec is noticed by the poll. */
BPF_RINGBUF_OUTPUT(unwind_execs, 1);

/* Keeps clang from dropping a bound the verifier needs (it may drop an
 * `i & 127` bound on an index; an empty asm barrier on the index keeps it). */
#define UNWIND_BARRIER(x) asm volatile("" : "+r"(x))

/* 1 when a <= b, without a branch (user addresses are below 2^63): the
 * searches below are branch-free, so the verifier sees one path per frame
 * instead of one per outcome of every comparison: that is what lets
 * UNWIND_FRAMES_PER_CALL frames per tail call verify. */
static __always_inline u64 unwind_le(u64 a, u64 b) {
    u64 take = 1 - ((b - a) >> 63);
    UNWIND_BARRIER(take);
    return take & 1;
}

/* The index of the mapping holding pc, or -1: the cached one of the previous
 * frame when it still holds pc (callers are mostly in the same file), else
 * the last one starting at or below pc. */
static __always_inline int unwind_find_mapping(struct unwind_proc *proc, u64 pc, u32 cached) {
    u32 n = proc->count;
    if (n == 0 || n > UNWIND_MAX_MAPPINGS)
        return -1;
    cached &= UNWIND_MAX_MAPPINGS - 1;
    if (proc->maps[cached].start <= pc && pc < proc->maps[cached].end)
        return cached;
    u32 base = 0;
    for (int i = 0; i < UNWIND_MAPPING_STEPS; i++) {
        if (n <= 1)
            break;
        u32 half = n / 2;
        u32 at = base + half;
        UNWIND_BARRIER(at);
        at &= UNWIND_MAX_MAPPINGS - 1;
        base += half * (u32)unwind_le(proc->maps[at].start, pc);
        n -= half;
    }
    UNWIND_BARRIER(base);
    base &= UNWIND_MAX_MAPPINGS - 1;
    struct unwind_mapping *m = &proc->maps[base];
    return (m->start <= pc && pc < m->end) ? (int)base : -1;
}

/* Narrow the rows to search for vaddr to its bucket's (when indexed). */
static __always_inline void unwind_narrow(struct unwind_mapping *m, u64 vaddr, u32 *base, u32 *n) {
    u32 buckets = m->buckets;
    if (!buckets)
        return;
    u64 bucket = vaddr > m->first_pc ? (vaddr - m->first_pc) >> (m->shift & 63) : 0;
    if (bucket >= buckets)
        bucket = buckets - 1;
    u32 at = m->index_start + (u32)bucket;
    u32 *lo = unwind_index.lookup(&at);
    at++;
    u32 *hi = unwind_index.lookup(&at);
    if (!lo || !hi || *hi < *lo || *hi >= *n)
        return;
    *base += *lo;
    *n = *hi - *lo + 1;
}

/* The row in force at pc: 1 found; 0 none (no table: frame pointer); -1
 * none because pc is in none of the described process's mappings. */
static __always_inline int unwind_find_row(struct unwind_state *st, struct unwind_proc *proc, u64 pc,
                                           struct unwind_row *out) {
    if (!proc)
        return 0;
    int found = unwind_find_mapping(proc, pc, st->mapping);
    if (found < 0)
        return -1;
    st->mapping = (u32)found;
    struct unwind_mapping *m = &proc->maps[found & (UNWIND_MAX_MAPPINGS - 1)];
    if (!m->rows_len)
        return 0;
    u64 vaddr = pc - m->bias;
    u32 base = m->rows_start, n = m->rows_len;
    unwind_narrow(m, vaddr, &base, &n);
    for (int i = 0; i < UNWIND_ROW_STEPS; i++) {
        if (n <= 1)
            break;
        u32 half = n / 2;
        u32 at = base + half;
        struct unwind_row *row = unwind_rows.lookup(&at);
        if (!row)
            return 0;
        base += half * (u32)unwind_le(row->pc, vaddr);
        n -= half;
    }
    struct unwind_row *row = unwind_rows.lookup(&base);
    if (!row || row->pc > vaddr)
        return 0;
    *out = *row;
    return 1;
}

static __always_inline int unwind_read(u64 *dst, u64 addr) {
    return read_user(dst, sizeof(*dst), (void *)addr);
}

/* One step by the frame pointer; returns 1 when the stack ends. */
static __always_inline int unwind_fp_step(struct unwind_state *st) {
    u64 bp = st->bp, saved[2] = {}; /* the caller's rbp, then the return address */
    if (!bp || read_user(saved, sizeof(saved), (void *)bp))
        return 1;
    u64 next_bp = saved[0], ra = saved[1];
    if (next_bp && next_bp <= bp)
        next_bp = 0; /* frames only go up the stack */
    st->pc = ra;
    st->sp = bp + 16;
    st->bp = next_bp;
    return 0;
}

/* One step by a table row; returns 1 when the stack ends. */
static __always_inline int unwind_row_step(struct unwind_state *st, struct unwind_row *row) {
    u64 cfa, ra = 0, bp = st->bp;
    if (row->kind == ROW_SIGNAL) {
        u64 sp = st->sp;
        if (unwind_read(&st->pc, sp + SIGFRAME_RIP) || unwind_read(&st->bp, sp + SIGFRAME_RBP) ||
            unwind_read(&st->sp, sp + SIGFRAME_RSP))
            return 1;
        st->flags = UNWIND_EXACT_PC;
        return 0;
    }
    if (row->kind == ROW_RSP)
        cfa = st->sp + row->cfa_off;
    else if (row->kind == ROW_RBP)
        cfa = st->bp + row->cfa_off;
    else if (row->kind == ROW_PLT)
        cfa = st->sp + row->cfa_off + (((st->pc & 15) >= row->arg) ? 8 : 0);
    else
        return 1; /* STOP (outermost frame) or UNSUPPORTED */
    if (cfa <= st->sp)
        return 1;
    if (row->rbp_off && row->rbp_off + 8 == row->ra_off) {
        u64 saved[2] = {}; /* the usual push %rbp frame: both in one read */
        if (read_user(saved, sizeof(saved), (void *)(cfa + row->rbp_off)))
            return 1;
        bp = saved[0];
        ra = saved[1];
    } else if (unwind_read(&ra, cfa + row->ra_off) || (row->rbp_off && unwind_read(&bp, cfa + row->rbp_off))) {
        return 1;
    }
    st->pc = ra;
    st->sp = cfa;
    st->bp = bp;
    return 0;
}

/* Record the current pc, then move to the caller; returns 1 when done. */
static __always_inline int unwind_step(struct unwind_state *st, struct unwind_proc *proc) {
    u32 len = st->stack.len;
    u64 pc = st->pc;
    if (len >= UNWIND_MAX_FRAMES || !pc)
        return 1;
    UNWIND_BARRIER(len);
    st->stack.addrs[len & (UNWIND_MAX_FRAMES - 1)] = pc;
    st->stack.len = len + 1;
    st->stack.hash = (st->stack.hash ^ pc) * 0x100000001b3ULL;
    u64 at = (len == 0 || (st->flags & UNWIND_EXACT_PC)) ? pc : pc - 1;
    st->flags = 0;
    struct unwind_row row = {};
    int found = unwind_find_row(st, proc, at, &row);
    st->stack.flags &= ~USTACK_FP_END;
    if (found > 0 && row.kind != ROW_GAP)
        return unwind_row_step(st, &row);
    if (len == 0 && st->at_entry) { /* no table yet, but the return address is on top */
        if (unwind_read(&st->pc, st->sp))
            return 1;
        st->sp += 8;
        return 0;
    }
    if (st->mode != UNWIND_MODE_AUTO && proc) /* dwarf: tables only, once the process has them */
        return 1;
    if (found < 0 && !(st->stack.flags & USTACK_FP_FROM_MASK))
        st->stack.flags |= (len + 1) & USTACK_FP_FROM_MASK;
    st->stack.flags |= USTACK_FP_END;
    return unwind_fp_step(st);
}

/* Store the walked stack: ustacks{active} for a count, uwstacks{slot} for a
 * weighted probe. Returns its id, or -errno. */
static __always_inline s32 unwind_store(struct unwind_state *st) {
    if (st->stack.len == 0)
        return -EFAULT;
    u64 hash = (st->stack.hash ^ st->stack.len ^ ((u64)st->stack.flags << 32)) * 0x9e3779b97f4a7c15ULL;
    st->stack.hash = hash;
    u32 id = (u32)(hash >> 34) | WALKER_ID_BIT;
    /* Mostly a stack seen before: look it up first, insert only when new. */
    struct ustack *old;
    int err = -EEXIST;
    if (st->kind == UNWIND_COUNT) {
        old = st->active ? ustacks1.lookup(&id) : ustacks0.lookup(&id);
        if (!old) {
            if (st->active) {
                err = ustacks1.insert(&id, &st->stack);
                old = err == -EEXIST ? ustacks1.lookup(&id) : NULL; /* another CPU, just now */
            } else {
                err = ustacks0.insert(&id, &st->stack);
                old = err == -EEXIST ? ustacks0.lookup(&id) : NULL;
            }
        }
    } else {
        old = st->slot ? uwstacks1.lookup(&id) : uwstacks0.lookup(&id);
        if (!old) {
            if (st->slot) {
                err = uwstacks1.insert(&id, &st->stack);
                old = err == -EEXIST ? uwstacks1.lookup(&id) : NULL;
            } else {
                err = uwstacks0.insert(&id, &st->stack);
                old = err == -EEXIST ? uwstacks0.lookup(&id) : NULL;
            }
        }
    }
    if (err == -EEXIST)
        return (old && old->hash == hash) ? (s32)id : -EEXIST;
    return err ? err : (s32)id;
}

/* Store the walked stack and count what the walk was for. */
static __always_inline void unwind_finish(struct unwind_state *st) {
    st->key.user_stack_id = unwind_store(st);
    if (st->kind == UNWIND_WEIGHT) {
        struct wkey key = {
            .tgid = st->key.tgid, .tid = st->key.tid, .user_stack_id = st->key.user_stack_id,
            .kernel_stack_id = st->key.kernel_stack_id, .leaf_ip = st->leaf_ip};
        add_weight(st->active, &key, st->weight);
    } else if (st->kind == UNWIND_BLOCKED) {
        struct pending out = {
            .start_ns = st->weight, .tgid = st->key.tgid, .user_stack_id = st->key.user_stack_id,
            .kernel_stack_id = st->key.kernel_stack_id, .epoch = st->epoch,
            .python_stack_id = st->key.python_stack_id};
        u32 tid = st->key.tid;
        blocked.update(&tid, &out);
    } else {
        add_count((void *)(u64)st->active, &st->key);
    }
}

/* Up to UNWIND_FRAMES_PER_CALL frames; returns 1 when the stack is done. */
static __always_inline int unwind_frames(struct unwind_state *st) {
    struct unwind_proc *proc = unwind_procs.lookup(&st->key.tgid);
    for (int i = 0; i < UNWIND_FRAMES_PER_CALL; i++) {
        if (unwind_step(st, proc))
            return 1;
    }
    return 0;
}

/* The walker: walk, go on in a new tail call of itself, finish when the
 * stack ends (or when the tail call failed: keep what was walked). Compiled
 * once: its copies for kprobe-type and tracepoint-type programs (a tail call
 * stays within its type) are these instructions with unwind_progs swapped
 * for unwind_progs_kp / unwind_progs_tp (bpf/retarget.py). */
int unwind_walk(void *ctx) {
    u32 zero = 0;
    struct unwind_state *st = unwind_scratch.lookup(&zero);
    if (!st)
        return 0;
    if (!unwind_frames(st))
        unwind_progs.call(ctx, 0);
    unwind_finish(st);
    return 0;
}

/* The user registers: `regs` when they are user mode (a perf sample taken
 * there, a uprobe), else the task's saved ones (a sample taken in the kernel,
 * a kprobe, a tracepoint: regs NULL). */
static __always_inline int unwind_user_regs(struct pt_regs *regs, struct unwind_state *st) {
    if (regs && (regs->cs & 3) == 3) {
        st->pc = regs->ip;
        st->sp = regs->sp;
        st->bp = regs->bp;
        return 0;
    }
    struct pt_regs *task = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
    if (!task)
        return -1;
    if (bpf_probe_read_kernel(&st->pc, sizeof(st->pc), &task->ip) ||
        bpf_probe_read_kernel(&st->sp, sizeof(st->sp), &task->sp) ||
        bpf_probe_read_kernel(&st->bp, sizeof(st->bp), &task->bp))
        return -1;
    return 0;
}

/* The scratch state set up for a walk from `regs`, or NULL ("fp" mode, or no
 * user registers: the caller uses get_stackid). */
static __always_inline struct unwind_state *unwind_begin(struct pt_regs *regs, u32 kind) {
    u32 zero = 0;
    u32 *mode = unwind_mode.lookup(&zero);
    if (!mode || *mode == UNWIND_MODE_FP)
        return NULL;
    struct unwind_state *st = unwind_scratch.lookup(&zero);
    if (!st || unwind_user_regs(regs, st))
        return NULL;
    st->kind = kind;
    st->at_entry = 0;
    st->mode = *mode;
    st->flags = 0;
    st->mapping = 0;
    st->stack.len = 0;
    st->stack.flags = 0;
    st->stack.hash = 0xcbf29ce484222325ULL;
    return st;
}

/* A followed process forked (--children): the child has its parent's code
 * until it execs, so it gets the parent's mappings (and tables) at once
 * instead of frame pointers until user space describes it. A new thread
 * lands here too; user space removes its entry again (keys are tgids). */
static __always_inline void unwind_fork(u32 parent, u32 child) {
    struct unwind_proc *proc = unwind_procs.lookup(&parent);
    if (proc)
        unwind_procs.update(&child, proc);
}

/* A process exec'd: its mappings are of the old image, wrong for the new one;
 * frame pointers until user space, woken here, describes the new image
 * (`wake`: a target, woken even without an entry). */
static __always_inline void unwind_exec(u32 tgid, u32 wake) {
    if (unwind_procs.delete(&tgid) == 0 || wake)
        unwind_execs.ringbuf_output(&tgid, sizeof(tgid), 0);
}

/* The hooks (declared in bpftop.bpf.c): they return only when the walker
 * cannot run. A count: */
static __always_inline void unwind_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key, u32 active,
                                              u32 at_entry) {
    struct pt_regs *regs = ctx_kind == CTX_TRACEPOINT ? NULL : (struct pt_regs *)ctx;
    struct unwind_state *st = unwind_begin(regs, UNWIND_COUNT);
    if (!st)
        return;
    st->key = *key;
    st->active = active;
    st->at_entry = at_entry;
    if (ctx_kind == CTX_PERF)
        unwind_progs.call(ctx, 0);
    else if (ctx_kind == CTX_KPROBE)
        unwind_progs_kp.call(ctx, 0);
    else
        unwind_progs_tp.call(ctx, 0);
}

/* A uretprobe's return: (key, leaf_ip) gets `weight_ns`. */
static __always_inline void unwind_weighted(struct pt_regs *ctx, struct wkey *key, u32 state, u32 slot,
                                            u64 weight_ns) {
    struct unwind_state *st = unwind_begin(ctx, UNWIND_WEIGHT);
    if (!st)
        return;
    st->key.tgid = key->tgid;
    st->key.tid = key->tid;
    st->key.kernel_stack_id = key->kernel_stack_id;
    st->leaf_ip = key->leaf_ip;
    st->active = state & 1;
    st->slot = slot;
    st->weight = weight_ns;
    unwind_progs_kp.call(ctx, 0);
}

/* offcpu: the thread `tid` leaves the CPU blocked; `out` is its entry. */
static __always_inline void unwind_blocked(void *ctx, struct pending *out, u32 tid, u32 slot) {
    struct unwind_state *st = unwind_begin(NULL, UNWIND_BLOCKED);
    if (!st)
        return;
    st->key.tgid = out->tgid;
    st->key.tid = tid;
    st->key.kernel_stack_id = out->kernel_stack_id;
    st->key.python_stack_id = out->python_stack_id;
    st->slot = slot;
    st->epoch = out->epoch;
    st->weight = out->start_ns;
    unwind_progs_tp.call(ctx, 0);
}
