/* In-kernel walk of CPython 3.11 to 3.14 frames (tests/bpf/test_python*.py
 * check it; bench/python.py measures its cost per sample).
 *
 * Appended to bpftop.bpf.c by program.py after the .eh_frame walker (BCC
 * rewrites map calls only in its main file), so struct sample_key and
 * count_user_stack() are in scope; bpftop.bpf.c declares python_user_stack()
 * ahead. For a process user space described in python_procs (bpf/python_walk.py),
 * python_user_stack() finds the sampled thread's own PyThreadState (the
 * gilstate TSS key's slot in glibc's thread-specific data,
 * pthread_getspecific(autoTSSkey) for a key below 32 is *(fsbase +
 * PY_TSS_BASE + 16 * key + 8): bound to the thread even while it has let go
 * of the GIL; else, 3.13+, the thread-local _Py_tss_tstate, set only while
 * the thread is attached, at fsbase + offset in the executable's static TLS
 * or at an offset into a shared libpython's block, dtv[module] with glibc's
 * dtv at fsbase + 8; fsbase is task->thread.fsbase, at an offset user space
 * reads from the kernel's BTF), then tail-calls python_walk, which follows the
 * current frame (tstate->cframe->current_frame in 3.11,
 * tstate->current_frame in 3.13+) and each _PyInterpreterFrame's `previous`,
 * PY_FRAMES_PER_CALL frames per call, recording (code object, instruction
 * index, is_entry, identity) innermost first. No strings are read here: user space names the code
 * objects, later (at the next drain), when the one sampled may have been
 * freed and its address reused by another. The identity lets it tell: a mix
 * of the code object's co_firstlineno, co_filename and co_qualname pointers
 * and the hash cached in the co_qualname string (symbols/python/code.py
 * computes the same from what it reads; tests/bpf/test_python_churn.py).
 * At PY_MAX_FRAMES the walk stops (the innermost frames are kept, the root
 * end is cut) and the stack is marked truncated. The frames go into a
 * deduplicating store (pystacks0/1, one per generation) under an id with
 * PY_ID_BIT set (0 in the key: no Python frames); a hash collision is
 * -EEXIST, never a wrong stack. Then the native user stack is taken as
 * usual (count_user_stack: the .eh_frame walker or get_stackid).
 *
 * offcpu (python_blocked, from sched_switch): the frames of the thread
 * leaving the CPU go into the run-long store of the handler slot
 * (pywstacks{slot}, like the native uwstacks{slot}: the wake-up that counts
 * may come generations later), their id into the thread's `blocked` entry
 * and from there into the weighted key, so two Python stacks on one native
 * stack stay apart. Then the native walk goes on as unwind_blocked does.
 * No --gil filter there: a thread blocks without the GIL.
 *
 * Offsets come per process from python_procs (user space takes them from
 * its own 3.11 table or the target's _Py_DebugOffsets), so one program walks
 * every supported version at once. One PY_WINDOW-byte read per frame covers
 * the code object, previous, the instruction pointer and the entry byte:
 * 3.11's is_entry flag on the entry frame itself, or (3.13+) the owner byte
 * of the shim frame each eval-loop invocation pushes below its first frame
 * (that shim is not recorded: the frame recorded before it is marked entry).
 * 3.14's f_executable is a tagged pointer: its low bits are cleared.
 */

#define PY_MAX_FRAMES 128 /* power of two */
#ifndef PY_FRAMES_PER_CALL
#define PY_FRAMES_PER_CALL 32
#endif
#define PY_ID_BIT 0x40000000
#define PY_TSS_BASE 0x310        /* glibc: struct pthread's specific_1stblock */
#define PY_DTV 8                 /* glibc: tcbhead_t.dtv, at the thread pointer + 8 */
#define PY_WINDOW_WORDS 10       /* the frame read, and the identity read: 80 bytes */
#define PY_STR_HASH 24           /* PyASCIIObject.hash (-1: not computed yet), 3.11 to 3.14 */
#define PY_IDENT_MUL 0x9e3779b97f4a7c15ULL

/* Indices of the per-CPU python_counts. */
#define PY_COUNT_WALKED 0     /* samples with Python frames */
#define PY_COUNT_TRUNCATED 1  /* ... of which cut at PY_MAX_FRAMES */
#define PY_COUNT_NO_TSTATE 2  /* a Python process's thread without a thread state */
#define PY_COUNT_READ_ERROR 3 /* a frame could not be read: the walk stopped there */
#define PY_COUNT_NO_GIL 4     /* --gil: samples not taken, the thread did not hold the GIL */
#define PY_COUNT_SLOTS 5
/* One Python process, as bpf/python_walk.py writes it. */
struct python_proc {
    u64 tss_key_addr; /* 3.11: &_PyRuntime.gilstate.autoTSSkey {int initialized; int key};
                         0: the thread state is the thread-local at tls_offset */
    s64 tls_offset;   /* from fsbase (tls_module 0) or into dtv[tls_module]'s block */
    u64 gil_holder;   /* --gil: the GIL holder's PyThreadState * (0: unknown) */
    u64 gil_locked;   /* --gil: the GIL's int locked (0: the holder is 0 when free) */
    u32 fsbase_off;   /* offsetof(struct task_struct, thread.fsbase) */
    u16 tls_module;
    s16 tstate_cframe;   /* tstate->cframe (3.11), or -1: the frame is in tstate */
    u16 current_frame;   /* in the cframe, or in tstate */
    u16 frame_window;    /* where the frame read starts in a frame */
    u8 frame_code;       /* word indices in the frame read: f_code / f_executable */
    u8 frame_previous;
    u8 frame_instr;      /* prev_instr / instr_ptr */
    u8 frame_entry;      /* byte index: is_entry (3.11) / owner */
    u8 entry_owner;      /* 0: the byte flags an entry frame; else a shim frame's owner */
    u8 code_tag_bits;    /* low bits of a tagged code pointer */
    u16 code_bytecode;   /* co_code_adaptive */
    u16 ident_base;      /* where the identity read starts in a code object */
    u8 ident_firstlineno; /* byte index of co_firstlineno (an int) in that read */
    u8 ident_filename;   /* word indices of co_filename and co_qualname */
    u8 ident_qualname;
    u8 pad[3];
};

struct pyframe {
    u64 code;   /* PyCodeObject address */
    s32 instr;  /* instruction index (negative: not started) */
    u32 entry;  /* 1: the outermost frame of its _PyEval_EvalFrameDefault */
    u64 ident;  /* python_ident() of the code object when sampled (0: unreadable) */
};

struct pystack {
    u64 hash;
    u32 len;
    u32 truncated;
    struct pyframe frames[PY_MAX_FRAMES];
};

#define PY_FOR_COUNT 0   /* one count: stack into pystacks{active} */
#define PY_FOR_BLOCKED 1 /* offcpu: stack into pywstacks{slot}, then the blocked entry */

struct python_state {
    struct sample_key key;
    u32 active;
    u32 at_entry; /* a uprobe at a function's first instruction (count_user_stack) */
    u32 kind;     /* PY_FOR_* */
    u32 slot;     /* BLOCKED: the handler slot */
    u32 epoch;    /* BLOCKED: the probe epoch */
    u32 pad;
    u64 start_ns; /* BLOCKED: when it blocked */
    u64 frame; /* the next _PyInterpreterFrame to read */
    u64 last_code, last_ident; /* the previous frame's: a recursion reads it once */
    struct python_proc proc;   /* the process's layout */
    u64 window[PY_WINDOW_WORDS]; /* one frame's read, or one code object's identity fields */
    struct pystack stack;
};

BPF_HASH(python_procs, u32, struct python_proc, TARGETS_SIZE);
BPF_PERCPU_ARRAY(python_scratch, struct python_state, 1);
BPF_PERCPU_ARRAY(python_counts, u64, PY_COUNT_SLOTS);
BPF_F_TABLE("hash", u32, struct pystack, pystacks0, STACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_F_TABLE("hash", u32, struct pystack, pystacks1, STACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_PROG_ARRAY(python_progs, 1);    /* python_walk: perf events */
BPF_F_TABLE("hash", u32, struct pystack, pywstacks0, WSTACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_F_TABLE("hash", u32, struct pystack, pywstacks1, WSTACK_STORAGE_SIZE, BPF_F_NO_PREALLOC);
BPF_PROG_ARRAY(python_progs_kp, 1); /* python_walk_kp: uprobes, USDT, kprobes */
BPF_PROG_ARRAY(python_progs_tp, 1); /* python_walk_tp: tracepoints, offcpu's sched_switch */

#define PY_BARRIER(x) asm volatile("" : "+r"(x))

static __always_inline void python_count(u32 slot) {
    u64 *n = python_counts.lookup(&slot);
    if (n)
        (*n)++;
}

static __always_inline int python_read(u64 *dst, u64 addr) {
    return read_user(dst, sizeof(*dst), (void *)addr);
}

/* Store the walked frames under `id`: `which` is 0/1 for pystacks0/1, 2/3
 * for pywstacks0/1 (offcpu, only from a tracepoint program). Returns the
 * entry now under `id` (another stack's on a collision) or NULL; -errno in *err. */
static __always_inline struct pystack *python_insert(struct python_state *st, u32 *id, u32 which,
                                                     int *err) {
    struct pystack *old;
    if (which == 0) {
        old = pystacks0.lookup(id);
        if (!old && (*err = pystacks0.insert(id, &st->stack)) == -EEXIST)
            old = pystacks0.lookup(id); /* another CPU, just now */
    } else if (which == 1) {
        old = pystacks1.lookup(id);
        if (!old && (*err = pystacks1.insert(id, &st->stack)) == -EEXIST)
            old = pystacks1.lookup(id);
    } else if (which == 2) {
        old = pywstacks0.lookup(id);
        if (!old && (*err = pywstacks0.insert(id, &st->stack)) == -EEXIST)
            old = pywstacks0.lookup(id);
    } else {
        old = pywstacks1.lookup(id);
        if (!old && (*err = pywstacks1.insert(id, &st->stack)) == -EEXIST)
            old = pywstacks1.lookup(id);
    }
    return old;
}

/* Store the frames (this generation's store, or the slot's run-long one for
 * offcpu); returns their id, 0 without frames, or -errno. */
static __always_inline s32 python_store(struct python_state *st, u32 ctx_kind) {
    if (!st->stack.len)
        return 0;
    u64 hash = (st->stack.hash ^ st->stack.len ^ ((u64)st->stack.truncated << 40)) *
               0x9e3779b97f4a7c15ULL;
    st->stack.hash = hash;
    u32 id = (u32)(hash >> 34) | PY_ID_BIT;
    int err = -EEXIST;
    u32 which = st->active ? 1 : 0;
    if (ctx_kind == CTX_TRACEPOINT && st->kind == PY_FOR_BLOCKED)
        which = st->slot ? 3 : 2;
    struct pystack *old = python_insert(st, &id, which, &err);
    python_count(PY_COUNT_WALKED);
    if (st->stack.truncated)
        python_count(PY_COUNT_TRUNCATED);
    if (err == -EEXIST)
        return (old && old->hash == hash) ? (s32)id : -EEXIST;
    return err ? err : (s32)id;
}

/* Store the frames, name them in the key, and go on with the native user
 * stack (which counts the sample, or for offcpu makes the blocked entry). */
static __always_inline void python_finish(void *ctx, u32 ctx_kind, struct python_state *st) {
    st->key.python_stack_id = python_store(st, ctx_kind);
    if (ctx_kind == CTX_TRACEPOINT && st->kind == PY_FOR_BLOCKED) {
        u32 tid = st->key.tid, slot = st->slot;
        struct pending out = {.start_ns = st->start_ns, .tgid = st->key.tgid, .epoch = st->epoch,
                              .kernel_stack_id = st->key.kernel_stack_id,
                              .python_stack_id = st->key.python_stack_id};
        unwind_blocked(ctx, &out, tid, slot); /* walks and stores, unless fp */
        out.user_stack_id = weighted_stack(ctx, slot, BPF_F_USER_STACK);
        blocked.update(&tid, &out);
        return;
    }
    struct sample_key key = st->key;
    count_user_stack(ctx, ctx_kind, &key, st->active, st->at_entry);
}

/* Which code object is at `code` now: its first line, file name and
 * qualified name pointers, and the qualified name's cached hash, mixed
 * (symbols/python/code.py: code_ident). 0 when they cannot be read. */
static __always_inline u64 python_ident(struct python_state *st, u64 code) {
    struct python_proc *p = &st->proc;
    s64 hash = 0;
    if (read_user(st->window, sizeof(st->window), (void *)(code + p->ident_base)))
        return 0;
    u32 at = p->ident_firstlineno & 7, fn = p->ident_filename, qn = p->ident_qualname;
    if (fn >= PY_WINDOW_WORDS || qn >= PY_WINDOW_WORDS)
        return 0;
    u64 qualname = st->window[qn], filename = st->window[fn];
    if (!qualname || python_read((u64 *)&hash, qualname + PY_STR_HASH))
        return 0;
    u64 ident = (u32)(st->window[0] >> (8 * at));
    ident = (ident ^ filename) * PY_IDENT_MUL;
    ident = (ident ^ qualname) * PY_IDENT_MUL;
    ident = (ident ^ (u64)hash) * PY_IDENT_MUL;
    return ident ? ident : 1;
}

/* Record one frame and step to its caller; returns 1 when the walk is over. */
static __always_inline int python_step(struct python_state *st) {
    u64 frame = st->frame;
    if (!frame)
        return 1;
    u32 len = st->stack.len;
    if (len >= PY_MAX_FRAMES) {
        st->stack.truncated = 1;
        return 1;
    }
    struct python_proc *p = &st->proc;
    if (read_user(st->window, sizeof(st->window), (void *)(frame + p->frame_window))) {
        python_count(PY_COUNT_READ_ERROR);
        return 1;
    }
    u32 wc = p->frame_code, wp = p->frame_previous, wi = p->frame_instr, be = p->frame_entry;
    if (wc >= PY_WINDOW_WORDS || wp >= PY_WINDOW_WORDS || wi >= PY_WINDOW_WORDS ||
        be >= 8 * PY_WINDOW_WORDS)
        return 1;
    u64 code = st->window[wc] & ~(u64)p->code_tag_bits;
    u64 instr = st->window[wi];
    u8 entry_byte = ((u8 *)st->window)[be];
    st->frame = st->window[wp];
    u32 entry = entry_byte ? 1 : 0;
    if (p->entry_owner) {
        if (entry_byte == p->entry_owner) { /* an eval loop's shim: its caller's frame is next */
            if (len > 0) {
                u32 last = (len - 1) & (PY_MAX_FRAMES - 1);
                st->stack.frames[last].entry = 1;
                st->stack.hash = (st->stack.hash ^ 0x5e) * 0x100000001b3ULL;
            }
            return 0;
        }
        entry = 0;
    }
    s64 offset = (s64)(instr - code - p->code_bytecode);
    PY_BARRIER(len);
    struct pyframe *out = &st->stack.frames[len & (PY_MAX_FRAMES - 1)];
    out->code = code;
    out->instr = (s32)(offset >> 1);
    out->entry = entry;
    if (code != st->last_code) {
        st->last_code = code;
        st->last_ident = python_ident(st, code);
    }
    out->ident = st->last_ident;
    st->stack.len = len + 1;
    st->stack.hash = (st->stack.hash ^ code ^ out->ident) * 0x100000001b3ULL;
    st->stack.hash = (st->stack.hash ^ (u32)out->instr ^ ((u64)out->entry << 32)) * 0x100000001b3ULL;
    return 0;
}

/* The next tail call of a walk in a program of type `ctx_kind` (CTX_*: a
 * tail call reaches only a program of the caller's own type). */
static __always_inline void python_next(void *ctx, u32 ctx_kind) {
    if (ctx_kind == CTX_PERF)
        python_progs.call(ctx, 0);
    else if (ctx_kind == CTX_KPROBE)
        python_progs_kp.call(ctx, 0);
    else
        python_progs_tp.call(ctx, 0);
}

static __always_inline int python_walk_in(void *ctx, u32 ctx_kind) {
    u32 zero = 0;
    struct python_state *st = python_scratch.lookup(&zero);
    if (!st)
        return 0;
    for (int i = 0; i < PY_FRAMES_PER_CALL; i++) {
        if (python_step(st)) {
            python_finish(ctx, ctx_kind, st);
            return 0;
        }
    }
    python_next(ctx, ctx_kind);
    python_finish(ctx, ctx_kind, st); /* the tail call failed: keep what was walked */
    return 0;
}

int python_walk(struct bpf_perf_event_data *ctx) { return python_walk_in(ctx, CTX_PERF); }
int python_walk_kp(struct pt_regs *ctx) { return python_walk_in(ctx, CTX_KPROBE); }
int python_walk_tp(void *ctx) { return python_walk_in(ctx, CTX_TRACEPOINT); }

/* The sampled thread's own PyThreadState, or 0. */
static __always_inline u64 python_tstate(struct python_proc *proc) {
    u64 task = bpf_get_current_task(), fsbase = 0, slot = 0, tstate = 0;
    if (bpf_probe_read_kernel(&fsbase, sizeof(fsbase), (void *)(task + proc->fsbase_off)) || !fsbase)
        return 0;
    if (proc->tss_key_addr) {
        s32 tss[2] = {}; /* Py_tss_t: {int initialized; int key} */
        if (read_user(tss, sizeof(tss), (void *)proc->tss_key_addr) || !tss[0] || tss[1] < 0 ||
            tss[1] >= 32)
            return 0;
        slot = fsbase + PY_TSS_BASE + 16 * (u64)tss[1] + 8;
    } else if (proc->tls_module) {
        u64 dtv = 0, block = 0;
        if (python_read(&dtv, fsbase + PY_DTV) || !dtv ||
            python_read(&block, dtv + 16 * (u64)proc->tls_module) || !block)
            return 0;
        slot = block + proc->tls_offset;
    } else {
        slot = fsbase + proc->tls_offset;
    }
    if (python_read(&tstate, slot))
        return 0;
    return tstate;
}

/* The sampled thread's innermost Python frame, or 0; its thread state in *tstate_out. */
static __always_inline u64 python_current_frame(struct python_proc *proc, u64 *tstate_out) {
    u64 tstate = python_tstate(proc), frame = 0;
    if (!tstate)
        return 0;
    *tstate_out = tstate;
    u64 holder = tstate;
    if (proc->tstate_cframe >= 0 &&
        (python_read(&holder, tstate + (u64)proc->tstate_cframe) || !holder))
        return 0;
    if (python_read(&frame, holder + proc->current_frame))
        return 0;
    return frame;
}

/* --gil: whether the thread of state `tstate` holds its interpreter's GIL. */
static __always_inline int python_holds_gil(struct python_proc *proc, u64 tstate) {
    u64 holder = 0;
    s32 locked = 1;
    if (!tstate || !proc->gil_holder || python_read(&holder, proc->gil_holder) ||
        holder != tstate)
        return 0;
    if (proc->gil_locked && read_user(&locked, sizeof(locked), (void *)proc->gil_locked))
        return 0;
    return locked != 0;
}

/* --children: a forked process runs its parent's interpreter at the same
 * addresses, so it takes the parent's entry and its first samples have Python
 * frames before user space has looked at it (a new thread lands here too:
 * user space drops its entry with the thread's target). */
static __always_inline void python_fork(u32 parent, u32 child) {
    struct python_proc *proc = python_procs.lookup(&parent);
    if (proc)
        python_procs.update(&child, proc);
}

/* The scratch state set up for a walk from `frame`, or NULL. */
static __always_inline struct python_state *python_begin(u64 frame, struct python_proc *proc) {
    u32 zero = 0;
    struct python_state *st = python_scratch.lookup(&zero);
    if (!st)
        return NULL;
    st->proc = *proc;
    st->frame = frame;
    st->last_code = 0;
    st->last_ident = 0;
    st->stack.len = 0;
    st->stack.truncated = 0;
    st->stack.hash = 0xcbf29ce484222325ULL;
    return st;
}

/* The hook: returns 0 (and the caller goes on without Python frames) unless
 * the thread is in Python code; otherwise tail-calls python_walk. Returns 1
 * when the sample is not to be taken: --gil, and the thread of a Python
 * process does not hold the GIL (py-spy's --gil). */
static __always_inline int python_user_stack(void *ctx, u32 ctx_kind, struct sample_key *key,
                                             u32 active, u32 at_entry) {
    u32 tgid = key->tgid;
    struct python_proc *proc = python_procs.lookup(&tgid);
    if (!proc)
        return 0;
    u64 tstate = 0;
    u64 frame = python_current_frame(proc, &tstate);
    if (control_get(CONTROL_GIL_ONLY) && !python_holds_gil(proc, tstate)) {
        python_count(PY_COUNT_NO_GIL);
        return 1;
    }
    if (!frame) {
        python_count(PY_COUNT_NO_TSTATE);
        return 0;
    }
    struct python_state *st = python_begin(frame, proc);
    if (!st)
        return 0;
    st->key = *key;
    st->active = active;
    st->at_entry = at_entry;
    st->kind = PY_FOR_COUNT;
    python_next(ctx, ctx_kind); /* fails (no frames then) until user space loads the copy */
    return 0;
}

/* offcpu: the thread `tid` of a Python process leaves the CPU blocked; `out`
 * is its entry so far. Tail-calls python_walk_tp (which goes on with the
 * native walk and makes the entry); returns when the thread has no Python
 * frame or the copy is not loaded: the caller goes on without Python frames. */
static __always_inline void python_blocked(void *ctx, struct pending *out, u32 tid, u32 slot) {
    u32 tgid = out->tgid;
    struct python_proc *proc = python_procs.lookup(&tgid);
    if (!proc)
        return;
    u64 tstate = 0;
    u64 frame = python_current_frame(proc, &tstate);
    if (!frame) {
        python_count(PY_COUNT_NO_TSTATE);
        return;
    }
    struct python_state *st = python_begin(frame, proc);
    if (!st)
        return;
    struct sample_key key = {.tgid = tgid, .tid = tid, .kernel_stack_id = out->kernel_stack_id};
    st->key = key;
    st->kind = PY_FOR_BLOCKED;
    st->slot = slot;
    st->epoch = out->epoch;
    st->start_ns = out->start_ns;
    python_progs_tp.call(ctx, 0);
}
