/* libmktrace.so: a PMPI interposition tracer (LD_PRELOAD it into an unmodified MPI program). Each rank
 * appends fixed-size records to an in-memory buffer (one write per full buffer, none on the hot path
 * otherwise) and writes MKTRACE_DIR/rank-<r>.mkt in format v4 (README.md): header, records, footer.
 * The footer is written at MPI_Finalize, at MPI_Abort and from a SIGTERM/SIGINT/SIGSEGV handler, so a
 * killed run leaves a file marked as such, and a file without footer is known to be incomplete.
 * Deliberately plain C with no dependency but MPI, libc and libdl; calls from one thread at a time. */
#define _GNU_SOURCE
#include "kinds.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "format v1 is little-endian and this tracer writes native records: little-endian hosts only"
#endif

enum {
#define MKT_KIND_ENUM(name, code, text) MKT_##name = code,
    MKTRACE_KINDS(MKT_KIND_ENUM)
#undef MKT_KIND_ENUM
};

/* One record, exactly as on disk (README.md, "Records"). */
typedef struct {
    uint16_t kind;
    uint16_t flags; /* MKTRACE_POSTED_ANY_* for receives and probes */
    int32_t peer;
    double t_enter;
    double t_exit;
    int64_t bytes;
    uint64_t site;
    int32_t tag;
    int32_t root;
    uint32_t comm;
    uint32_t request;
    double cpu_gap; /* thread CPU seconds since the previous record's exit; -1 when not measured (v3) */
} mkt_record;
_Static_assert(sizeof(mkt_record) == MKTRACE_RECORD_BYTES, "record layout is part of the format");

typedef struct {
    MPI_Comm comm;
    uint32_t id;
    int size;
    int *world; /* local rank -> MPI_COMM_WORLD rank (NULL for world itself) */
} mkt_comm;

typedef struct {
    uint64_t key; /* the MPI_Request handle's bits; 0 empty, 1 deleted */
    uint32_t id;
    uint32_t comm;
    int32_t peer, tag;
    int64_t bytes;
    int is_recv;
    int comm_index;
} mkt_req;

typedef struct {
    uint64_t raw_key; /* hash of the raw addresses (this process only) */
    uint64_t hash;    /* hash of (module basename, offset) of each frame: the same on every rank */
    uint32_t depth;
    void *raw[MKTRACE_MAX_FRAMES];
    uint32_t module[MKTRACE_MAX_FRAMES];
    uint64_t offset[MKTRACE_MAX_FRAMES];
} mkt_site;

/* A memo of one call path (README.md, "Call sites"): the return address into the caller and the
 * tracer's frame address identify the path's stack depth; the stack slots that held the outer return
 * addresses when the path was first unwound are re-read and compared instead of unwinding again. */
typedef struct {
    uintptr_t ra, sp; /* key; ra == 0: empty */
    uint32_t nslots;
    uintptr_t slot[MKTRACE_MAX_FRAMES];
    uintptr_t value[MKTRACE_MAX_FRAMES];
    uint64_t hash;
} mkt_memo;

#define MKT_MEMO_CAP 4096u /* a power of two; two-way set-associative (2,048 sets), a miss only costs an unwind */
#define MKT_NAME_CAP 4096u /* distinct annotation names */
#define MKT_NAME_BYTES 4096u
#define MKT_LOOP_DEPTH 64u
#define MKT_SITE_CAP 8192u /* distinct call sites kept with their frames; more are hashed, not listed */
#define MKT_MODULE_CAP 256u
#define MKT_SIGNALS 3

static struct {
    int active;
    volatile sig_atomic_t closed;
    pthread_t owner; /* the thread that called MPI_Init: the only one that writes the file */
    int fd;
    int rank, size;
    double t0;
    int cpu_gaps, cpu_fresh;  /* MKTRACE_CPU_TIME=1; a call entered and its first record is not written yet */
    double cpu_gap_next;      /* the CPU time of the gap before that call */
    double cpu_exit, wall_exit; /* thread CPU seconds and now() at the exit of the last call */
    mkt_record *buf;
    size_t n, cap;
    uint64_t total;
    uint64_t fnv;
    uint32_t next_request;
    unsigned frames;
    mkt_comm *comms;
    size_t ncomms, capcomms;
    uint32_t next_comm_id;
    MPI_Group world_group;
    mkt_req *reqs;
    size_t capreqs, usedreqs, filledreqs;
    mkt_site *sites;
    size_t nsites;
    const char *modules[MKT_MODULE_CAP];
    size_t nmodules;
    mkt_memo *memo;
    uint64_t unwinds, memo_hits; /* statistics, for the benchmark (MKTRACE_STATS=1 prints them) */
    const char *names[MKT_NAME_CAP];
    const char *name_keys[MKT_NAME_CAP]; /* the pointer the program passed first (string literals) */
    size_t nnames;
    uint64_t loop_iter[MKT_LOOP_DEPTH];
    size_t loop_depth;
    uint16_t flags_next; /* the flags field of the next record (wildcards posted by a receive), then 0 */
    struct sigaction old[MKT_SIGNALS];
    char path[4096];
#ifdef SMPI_H
    void *self_base;     /* where this rank's copy of the program (and of this tracer, linked into it) is loaded */
    char self_path[4096]; /* the program's path (MKTRACE_PROGRAM from the launcher), the name of its frames */
#endif
} g = {.fd = -1};

static const int mkt_signals[MKT_SIGNALS] = {SIGTERM, SIGINT, SIGSEGV};

/* ---------- low-level output (async-signal-safe: write, arithmetic) ---------- */

static const uint64_t FNV_OFFSET = 14695981039346656037ull, FNV_PRIME = 1099511628211ull;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * FNV_PRIME;
    return h;
}

static void write_all(const void *p, size_t n)
{
    const char *c = p;
    while (n > 0 && g.fd >= 0) {
        ssize_t w = write(g.fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return; /* disk full or closed: the missing footer will mark the file incomplete */
        }
        c += w;
        n -= (size_t)w;
    }
}

/* the records' checksum: FNV-1a with 64-bit little-endian words as its symbols (README.md, "Footer"),
 * 8 times fewer multiplications than bytewise; any one changed word changes the result */
static uint64_t fnv1a_words(uint64_t h, const void *p, size_t nwords)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < nwords; ++i) {
        uint64_t w;
        memcpy(&w, c + 8 * i, 8);
        h = (h ^ w) * FNV_PRIME;
    }
    return h;
}

/* write the buffered records and fold them into the checksum */
static void flush_records(void)
{
    size_t n = g.n;
    if (n == 0) return;
    g.fnv = fnv1a_words(g.fnv, g.buf, n * sizeof(mkt_record) / 8);
    write_all(g.buf, n * sizeof(mkt_record));
    g.total += n;
    g.n = 0;
}

/* a small staging buffer so that the footer takes few system calls */
static unsigned char stage[4096];
static size_t staged;

static void stage_flush(void)
{
    write_all(stage, staged);
    staged = 0;
}

static void stage_put(const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n > 0) {
        if (staged == sizeof stage) stage_flush();
        size_t k = sizeof stage - staged < n ? sizeof stage - staged : n;
        memcpy(stage + staged, c, k);
        staged += k;
        c += k;
        n -= k;
    }
}

static void stage_u32(uint32_t v) { stage_put(&v, 4); }
static void stage_u64(uint64_t v) { stage_put(&v, 8); }

/* footer: magic, count, checksum, status, detail, modules, call sites, annotation names (README.md,
 * "Footer") */
static void write_footer(uint32_t status, int32_t detail)
{
    flush_records();
    staged = 0;
    stage_put(MKTRACE_FOOTER_MAGIC, 8);
    stage_u64(g.total);
    stage_u64(g.fnv);
    stage_u32(status);
    stage_u32((uint32_t)detail);
    size_t nmod = g.nmodules, nsites = g.nsites;
    stage_u32((uint32_t)nmod);
    for (size_t i = 0; i < nmod; ++i) {
        size_t len = strlen(g.modules[i]);
        stage_u32((uint32_t)len);
        stage_put(g.modules[i], len);
    }
    stage_u32((uint32_t)nsites);
    for (size_t i = 0; i < nsites; ++i) {
        const mkt_site *s = &g.sites[i];
        stage_u64(s->hash);
        stage_u32(s->depth);
        for (uint32_t f = 0; f < s->depth; ++f) {
            stage_u32(s->module[f]);
            stage_u64(s->offset[f]);
        }
    }
    size_t nnames = g.nnames;
    stage_u32((uint32_t)nnames);
    for (size_t i = 0; i < nnames; ++i) {
        size_t len = strlen(g.names[i]);
        stage_u32((uint32_t)len);
        stage_put(g.names[i], len);
    }
    stage_flush();
    close(g.fd);
    g.fd = -1;
}

/* ---------- records ---------- */

/* the wildcards a receive or probe was posted with, for the flags of its record */
static uint16_t posted(int source, int tag)
{
    return (uint16_t)((source == MPI_ANY_SOURCE ? MKTRACE_POSTED_ANY_SOURCE : 0u) |
                      (tag == MPI_ANY_TAG ? MKTRACE_POSTED_ANY_TAG : 0u));
}

static double now(void) { return PMPI_Wtime() - g.t0; }

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The entry of a traced call: its time, and with MKTRACE_CPU_TIME=1 the CPU time the thread used since the
 * previous record's exit (a system call of ~1.3 us on our VM, so only on request: the launcher asks for it when the
 * ranks outnumber the cores, where wall-clock gaps include the time a rank waited for a core). A gap shorter than
 * MKT_CPU_SHORT_S of wall-clock time is its own CPU time (CPU time never exceeds it, and a rank descheduled in
 * between would have a gap of a scheduler slice): communication loops then pay one sample per call, not two. */
#define MKT_CPU_SHORT_S 10e-6
static double enter(void)
{
    double t = now();
    if (g.cpu_gaps) {
        const double wall = t - g.wall_exit;
        g.cpu_gap_next = wall < MKT_CPU_SHORT_S ? (wall > 0 ? wall : 0.0) : cpu_now() - g.cpu_exit;
        if (g.cpu_gap_next < 0) g.cpu_gap_next = 0;
        g.cpu_fresh = 1;
    }
    return t;
}

/* room for k more records in the buffer (flushed first when full, grown when k exceeds it): the records of one
 * call (a call and its ARGS records) are published together, so a signal handler never writes half of them */
static int reserve(size_t k)
{
    if (g.cap - g.n >= k) return 1;
    /* the only I/O outside Init/Finalize: one block write; signals wait so the block is written once */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &old);
    flush_records();
    if (g.cap < k) {
        mkt_record *b = realloc(g.buf, k * sizeof(mkt_record));
        if (b) {
            g.buf = b;
            g.cap = k;
        }
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    return g.cap >= k;
}

/* the call record at g.buf[g.n + offset] (not published yet) */
static void fill(size_t offset, int kind, double te, double tx, uint64_t site, int32_t peer, int32_t tag, int64_t bytes,
                 uint32_t comm, int32_t root, uint32_t request)
{
    mkt_record *r = &g.buf[g.n + offset];
    r->kind = (uint16_t)kind;
    r->flags = g.flags_next;
    g.flags_next = 0;
    r->peer = peer;
    r->t_enter = te;
    r->t_exit = tx;
    r->bytes = bytes;
    r->site = site;
    r->tag = tag;
    r->root = root;
    r->comm = comm;
    r->request = request;
    r->cpu_gap = -1.0;
    if (g.cpu_gaps) {
        /* the first record of a call carries the gap and samples the clock at the call's exit; its further records
         * (completions, written microseconds later) carry none */
        r->cpu_gap = 0.0;
        if (g.cpu_fresh) {
            r->cpu_gap = g.cpu_gap_next;
            g.cpu_fresh = 0;
            g.cpu_exit = cpu_now();
            g.wall_exit = tx;
        }
    }
}

static void emit(int kind, double te, double tx, uint64_t site, int32_t peer, int32_t tag, int64_t bytes,
                 uint32_t comm, int32_t root, uint32_t request)
{
    if (!g.active || !reserve(1)) return;
    fill(0, kind, te, tx, site, peer, tag, bytes, comm, root, request);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* a signal handler sees whole records only */
    ++g.n;
}

/* A call record followed by the ARGS records of its n int32 arguments (README.md, "Arguments"): 15 values per
 * record at bytes 4..63, the record's flags saying how many it holds. All are published at once. */
static void emit_args(int kind, double te, double tx, uint64_t site, int32_t peer, int32_t tag, uint32_t comm,
                      int32_t root, const int32_t *args, size_t n)
{
    if (!g.active) return;
    if (n > MKTRACE_MAX_ARGS) n = 0; /* absurd arguments: the call without them (the reader allows that) */
    const size_t extra = (n + MKTRACE_ARGS_PER_RECORD - 1) / MKTRACE_ARGS_PER_RECORD;
    if (!reserve(1 + extra)) {
        emit(kind, te, tx, site, peer, tag, 0, comm, root, 0);
        return;
    }
    fill(0, kind, te, tx, site, peer, tag, 0, comm, root, 0);
    for (size_t k = 0; k < extra; ++k) {
        mkt_record *r = &g.buf[g.n + 1 + k];
        const size_t first = k * MKTRACE_ARGS_PER_RECORD;
        const size_t cnt = n - first < MKTRACE_ARGS_PER_RECORD ? n - first : MKTRACE_ARGS_PER_RECORD;
        unsigned char *bytes = (unsigned char *)r;
        memset(r, 0, sizeof *r);
        r->kind = MKT_ARGS;
        r->flags = (uint16_t)cnt;
        memcpy(bytes + 4, args + first, cnt * sizeof(int32_t));
    }
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    g.n += 1 + extra;
}

/* scratch for the arguments of one call */
static int32_t *args_buf;
static size_t args_cap;

static int32_t *args_room(size_t n)
{
    if (n <= args_cap) return args_buf;
    size_t cap = n < 64 ? 64 : n;
    int32_t *b = realloc(args_buf, cap * sizeof *b);
    if (!b) return NULL;
    args_buf = b;
    args_cap = cap;
    return b;
}

/* ---------- call sites ---------- */

static uint32_t module_index(const char *name)
{
    for (size_t i = 0; i < g.nmodules; ++i)
        if (strcmp(g.modules[i], name) == 0) return (uint32_t)i;
    if (g.nmodules == MKT_MODULE_CAP) return UINT32_MAX;
    char *copy = strdup(name);
    if (!copy) return UINT32_MAX;
    g.modules[g.nmodules] = copy;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return (uint32_t)g.nmodules++;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

typedef struct {
    void *ip[MKTRACE_MAX_FRAMES + 3];
    uintptr_t cfa[MKTRACE_MAX_FRAMES + 3];
    int n;
} mkt_unwind;

static _Unwind_Reason_Code unwind_step(struct _Unwind_Context *ctx, void *arg)
{
    mkt_unwind *u = arg;
    if (u->n == (int)(sizeof u->ip / sizeof u->ip[0])) return _URC_END_OF_STACK;
    u->ip[u->n] = (void *)_Unwind_GetIP(ctx);
    u->cfa[u->n] = (uintptr_t)_Unwind_GetCFA(ctx);
    ++u->n;
    return _URC_NO_REASON;
}

/* the site of resolved frames fr[0..depth): looked up by raw addresses, resolved with dladdr when new */
static uint64_t site_of_frames(void *const *fr, uint32_t depth)
{
    uint64_t raw_key = fnv1a(FNV_OFFSET, fr, depth * sizeof(void *));
    for (size_t i = 0; i < g.nsites; ++i) /* few distinct sites per program: scan from the newest */
        if (g.sites[g.nsites - 1 - i].raw_key == raw_key) return g.sites[g.nsites - 1 - i].hash;
    mkt_site s;
    memset(&s, 0, sizeof s);
    s.raw_key = raw_key;
    s.depth = depth;
    uint64_t h = FNV_OFFSET;
    for (uint32_t f = 0; f < depth; ++f) {
        Dl_info info;
        const char *mod = "?";
        uint64_t off = (uint64_t)(uintptr_t)fr[f];
        if (dladdr(fr[f], &info) && info.dli_fname) {
            mod = info.dli_fname;
            off = (uint64_t)((uintptr_t)fr[f] - (uintptr_t)info.dli_fbase);
#ifdef SMPI_H
            /* Under SMPI each rank runs its own copy of the program (smpirun's dlopen privatization), each under
             * another temporary name: the program's frames are named by the program itself, as under mpirun. */
            if (info.dli_fbase == g.self_base) mod = g.self_path;
#endif
        }
        s.raw[f] = fr[f];
        s.module[f] = module_index(mod);
        s.offset[f] = off;
        const char *b = base_name(mod);
        h = fnv1a(h, b, strlen(b) + 1);
        h = fnv1a(h, &off, sizeof off);
    }
    s.hash = h;
    if (g.nsites < MKT_SITE_CAP) {
        g.sites[g.nsites] = s;
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
        ++g.nsites;
    }
    return h;
}

/* The call site of the wrapper that calls this: hash of up to g.frames return addresses, each taken as
 * (module basename, offset in module) so that it is the same on every rank and run of the binary.
 * Unwinding (libgcc's _Unwind_Backtrace) costs microseconds, so each call path is unwound once: the
 * memo keyed by (ra, this frame's address) keeps the stack slots where the outer return addresses were
 * found (libgcc's _Unwind_GetCFA of a frame's context is the stack pointer above its return address:
 * the slot is that minus sizeof(void *); checked when memoised, else the path is not memoised)
 * and their values; a later call with the same key whose slots still hold the same values has the
 * same frames, since each frame's function and stack layout follow from its return address. */
static __attribute__((noinline)) uint64_t capture_site(void *ra)
{
    if (!g.active || g.frames == 0) return 0;
    if (g.frames == 1) return site_of_frames(&ra, 1);
    const uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    const uint64_t mix = (((uint64_t)(uintptr_t)ra >> 2) ^ ((uint64_t)sp >> 4)) * 0x9E3779B97F4A7C15ull;
    /* two ways per set: two paths whose keys share a set (ASLR moves them on every run) both stay memoised;
     * the way last filled is way 0, a new path evicts way 1 */
    mkt_memo *set = &g.memo[((mix >> 52) & (MKT_MEMO_CAP / 2 - 1)) * 2];
    for (int w = 0; w < 2; ++w) {
        const mkt_memo *m = &set[w];
        if (m->ra != (uintptr_t)ra || m->sp != sp) continue;
        uint32_t k = 0;
        while (k < m->nslots && *(const uintptr_t *)m->slot[k] == m->value[k]) ++k;
        if (k == m->nslots) {
            ++g.memo_hits;
            return m->hash;
        }
    }
    ++g.unwinds;
    mkt_unwind u;
    u.n = 0;
    _Unwind_Backtrace(unwind_step, &u);
    int first = u.n; /* frame 0 is this function, 1 the wrapper, then the caller (== ra) */
    for (int i = 0; i < u.n; ++i)
        if (u.ip[i] == ra) { first = i; break; }
    if (first == u.n) first = u.n < 2 ? u.n : 2;
    uint32_t depth = (uint32_t)(u.n - first);
    if (depth > g.frames) depth = g.frames;
    if (depth == 0) return 0;
    uint64_t h = site_of_frames(&u.ip[first], depth);
    mkt_memo e;
    memset(&e, 0, sizeof e);
    e.ra = (uintptr_t)ra;
    e.sp = sp;
    e.hash = h;
    for (uint32_t f = 1; f < depth; ++f) {
        uintptr_t slot = u.cfa[first + f] - sizeof(void *);
        if (*(const uintptr_t *)slot != (uintptr_t)u.ip[first + f]) return h; /* another ABI: no memo */
        e.slot[e.nslots] = slot;
        e.value[e.nslots++] = (uintptr_t)u.ip[first + f];
    }
    if (!(set[0].ra == e.ra && set[0].sp == e.sp)) set[1] = set[0]; /* same key, other slots: replace in place */
    set[0] = e;
    return h;
}

#define SITE() capture_site(__builtin_return_address(0))

/* ---------- communicators ---------- */

static int comm_index(MPI_Comm comm);

static int add_comm(MPI_Comm comm, uint32_t id)
{
    if (g.ncomms == g.capcomms) {
        size_t cap = g.capcomms ? 2 * g.capcomms : 16;
        mkt_comm *c = realloc(g.comms, cap * sizeof *c);
        if (!c) return -1;
        g.comms = c;
        g.capcomms = cap;
    }
    mkt_comm *c = &g.comms[g.ncomms];
    c->comm = comm;
    c->id = id;
    c->world = NULL;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &c->size); /* peers of an intercommunicator are remote ranks */
    else
        PMPI_Comm_size(comm, &c->size);
    if (comm != MPI_COMM_WORLD) {
        c->world = malloc((size_t)c->size * 2 * sizeof(int));
        if (c->world) {
            int *local = c->world + c->size;
            for (int i = 0; i < c->size; ++i) local[i] = i;
            MPI_Group grp;
            if (inter)
                PMPI_Comm_remote_group(comm, &grp);
            else
                PMPI_Comm_group(comm, &grp);
            PMPI_Group_translate_ranks(grp, c->size, local, g.world_group, c->world);
            PMPI_Group_free(&grp);
        }
    }
    return (int)g.ncomms++;
}

/* index of comm in the table, registering a communicator not created through a traced call */
static int comm_index(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD) return 0;
    if (comm == MPI_COMM_NULL) return -1;
    for (size_t i = g.ncomms; i-- > 1;)
        if (g.comms[i].comm == comm) return (int)i;
    return add_comm(comm, g.next_comm_id++);
}

static uint32_t comm_id(int ci) { return ci >= 0 ? g.comms[ci].id : UINT32_MAX; }

/* a rank of comm (by table index) as a rank of MPI_COMM_WORLD; special values as README.md says */
static int32_t to_world(int ci, int r)
{
    if (r == MPI_ANY_SOURCE) return MKTRACE_ANY;
    if (r == MPI_PROC_NULL) return MKTRACE_PROC_NULL;
    if (r < 0 || ci < 0) return MKTRACE_NONE;
    const mkt_comm *c = &g.comms[ci];
    if (!c->world) return r;
    if (r >= c->size) return MKTRACE_NONE;
    return c->world[r] == MPI_UNDEFINED ? MKTRACE_NONE : c->world[r];
}

static int32_t tag_of(int tag) { return tag == MPI_ANY_TAG ? MKTRACE_ANY : tag; }

static int64_t tbytes(int count, MPI_Datatype t)
{
    int s = 0;
    if (t == MPI_DATATYPE_NULL || count <= 0) return 0;
    PMPI_Type_size(t, &s);
    return (int64_t)count * s;
}

/* ---------- requests ---------- */

static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof r < sizeof k ? sizeof r : sizeof k);
    return k < 2 ? k + 0x100000000ull : k; /* keep 0 and 1 for empty and deleted */
}

static size_t req_slot(uint64_t key)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) & (g.capreqs - 1);
}

/* a multimap: OpenMPI hands out the same handle for several requests that completed at once (small
 * isends), so a handle may be pending more than once; the oldest (lowest id) is completed first.
 * Linear probing; deleted slots are reused and dropped at the next rehash. */
static void req_place(const mkt_req *e)
{
    size_t i = req_slot(e->key);
    while (g.reqs[i].key > 1) i = (i + 1) & (g.capreqs - 1);
    if (g.reqs[i].key == 0) ++g.filledreqs;
    ++g.usedreqs;
    g.reqs[i] = *e;
}

static void req_rehash(size_t cap)
{
    mkt_req *t = calloc(cap, sizeof *t);
    if (!t) return;
    mkt_req *old = g.reqs;
    size_t oldcap = g.capreqs;
    g.reqs = t;
    g.capreqs = cap;
    g.usedreqs = 0;
    g.filledreqs = 0;
    for (size_t i = 0; i < oldcap; ++i)
        if (old[i].key > 1) req_place(&old[i]);
    free(old);
}

static void req_insert(const mkt_req *e)
{
    if ((g.filledreqs + 1) * 2 > g.capreqs) {
        size_t cap = g.capreqs ? g.capreqs : 256;
        while ((g.usedreqs + 1) * 4 > cap) cap *= 2;
        req_rehash(cap);
    }
    if (g.filledreqs + 1 >= g.capreqs) return; /* out of memory: this request is not tied to its wait */
    req_place(e);
}

/* remove and return the oldest entry of a request handle (key 0 when the tracer did not see it) */
static mkt_req req_take(uint64_t key)
{
    mkt_req none;
    memset(&none, 0, sizeof none);
    if (g.capreqs == 0) return none;
    size_t best = SIZE_MAX;
    for (size_t i = req_slot(key); g.reqs[i].key != 0; i = (i + 1) & (g.capreqs - 1))
        if (g.reqs[i].key == key && (best == SIZE_MAX || g.reqs[i].id < g.reqs[best].id)) best = i;
    if (best == SIZE_MAX) return none;
    mkt_req e = g.reqs[best];
    g.reqs[best].key = 1;
    --g.usedreqs;
    /* a deleted slot just before an empty one ends no probe chain: empty it and the deleted ones before it,
     * so that chains stay short when requests come and go (the common case) */
    const size_t mask = g.capreqs - 1;
    if (g.reqs[(best + 1) & mask].key == 0)
        for (size_t i = best; g.reqs[i].key == 1; i = (i - 1) & mask) {
            g.reqs[i].key = 0;
            --g.filledreqs;
        }
    return e;
}

static uint32_t new_request(MPI_Request r, int is_recv, int ci, int32_t peer, int32_t tag, int64_t bytes)
{
    mkt_req e;
    e.key = req_key(r);
    e.id = ++g.next_request;
    if (e.id == 0) e.id = ++g.next_request;
    e.comm = comm_id(ci);
    e.comm_index = ci;
    e.peer = peer;
    e.tag = tag;
    e.bytes = bytes;
    e.is_recv = is_recv;
    req_insert(&e);
    return e.id;
}

/* a COMPLETE record for a request handle seen before the wait/test call that completed it */
static void complete(uint64_t key, const MPI_Status *st, double te, double tx, uint64_t site)
{
    mkt_req e = req_take(key);
    if (e.key == 0) return; /* persistent or generalized request: not traced */
    int32_t peer = e.peer, tag = e.tag;
    int64_t bytes = e.bytes;
    if (e.is_recv && st) {
        /* the status names the sender only where the receive did not: SMPI 3.32 gives a receive from the rank
         * itself (MPI_Sendrecv to self) MPI_SOURCE = rank + 1, while the data is right */
        if (e.peer == MKTRACE_ANY) peer = to_world(e.comm_index, st->MPI_SOURCE);
        tag = st->MPI_TAG;
        int c = 0;
        if (PMPI_Get_count(st, MPI_BYTE, &c) == MPI_SUCCESS && c != MPI_UNDEFINED) bytes = c;
    }
    emit(MKT_COMPLETE, te, tx, site, peer, tag, bytes, e.comm, e.is_recv ? 1 : 0, e.id);
}

/* ---------- start and end ---------- */

static void on_signal(int sig)
{
    /* A process-directed signal may land on one of the MPI library's own threads (progress, PMIx) while the rank's
     * thread is in the middle of writing a block of records (it blocks the signals, but only for itself): hand it to
     * the rank's thread, which takes it once the block is whole. A fault on another thread is not ours to record. */
    if (!pthread_equal(pthread_self(), g.owner)) {
        if (sig != SIGSEGV) {
            pthread_kill(g.owner, sig);
            return;
        }
        for (int i = 0; i < MKT_SIGNALS; ++i)
            if (mkt_signals[i] == sig) sigaction(sig, &g.old[i], NULL);
        return; /* the faulting instruction runs again, with the previous action */
    }
    if (g.active && !g.closed) {
        g.closed = 1;
        g.active = 0;
        write_footer(MKTRACE_STATUS_SIGNAL, sig);
    }
    for (int i = 0; i < MKT_SIGNALS; ++i)
        if (mkt_signals[i] == sig) sigaction(sig, &g.old[i], NULL);
    raise(sig); /* delivered with the previous action when this handler returns */
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_f64(unsigned char *p, double v) { memcpy(p, &v, 8); }

static int start(void)
{
    const char *dir = getenv("MKTRACE_DIR");
    if (!dir || !*dir) dir = ".";
    PMPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &g.size);
    snprintf(g.path, sizeof g.path, "%s/rank-%d.mkt", dir, g.rank);
    g.fd = open(g.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (g.fd < 0) {
        fprintf(stderr, "mktrace: rank %d: cannot write %s: %s (not tracing)\n", g.rank, g.path, strerror(errno));
        return 0;
    }
    const char *ev = getenv("MKTRACE_BUFFER_EVENTS");
    g.cap = ev ? strtoul(ev, NULL, 10) : 0;
    if (g.cap < 16) g.cap = 65536;
    const char *fv = getenv("MKTRACE_FRAMES");
    g.frames = fv ? (unsigned)strtoul(fv, NULL, 10) : MKTRACE_MAX_FRAMES;
    if (g.frames > MKTRACE_MAX_FRAMES) g.frames = MKTRACE_MAX_FRAMES;
    g.buf = malloc(g.cap * sizeof(mkt_record));
    g.sites = malloc(MKT_SITE_CAP * sizeof(mkt_site));
    g.memo = calloc(MKT_MEMO_CAP, sizeof(mkt_memo));
    if (!g.buf || !g.sites || !g.memo) {
        fprintf(stderr, "mktrace: rank %d: out of memory (not tracing)\n", g.rank);
        close(g.fd);
        g.fd = -1;
        return 0;
    }
    PMPI_Comm_group(MPI_COMM_WORLD, &g.world_group);
    add_comm(MPI_COMM_WORLD, 0);
    g.next_comm_id = 1;
    g.fnv = FNV_OFFSET;
    int flag = 0, *global = NULL;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &global, &flag);
    uint32_t flags = (flag && global && *global) ? MKTRACE_FLAG_WTIME_GLOBAL : 0;
    const char *cv = getenv("MKTRACE_CPU_TIME");
    g.cpu_gaps = cv && strcmp(cv, "1") == 0;
    if (g.cpu_gaps) {
        flags |= MKTRACE_FLAG_CPU_GAPS;
        g.cpu_exit = cpu_now();
        g.wall_exit = 0.0;
    }
#ifdef SMPI_H
    Dl_info self;
    if (dladdr((void *)&g, &self)) g.self_base = self.dli_fbase; /* g lives in this copy too */
    /* the program's path as the launcher found it: the process itself is SimGrid's smpimain, which loads the copies */
    const char *prog = getenv("MKTRACE_PROGRAM");
    if (prog && *prog) {
        snprintf(g.self_path, sizeof g.self_path, "%s", prog);
    } else {
        ssize_t len = readlink("/proc/self/exe", g.self_path, sizeof g.self_path - 1);
        g.self_path[len > 0 ? len : 0] = '\0';
    }
#endif
    g.t0 = PMPI_Wtime();
    unsigned char h[MKTRACE_HEADER_BYTES];
    memset(h, 0, sizeof h);
    memcpy(h, MKTRACE_MAGIC, 8);
    put_u32(h + 8, MKTRACE_VERSION);
    put_u32(h + 12, (uint32_t)g.rank);
    put_u32(h + 16, (uint32_t)g.size);
    put_u32(h + 20, flags);
    put_f64(h + 24, PMPI_Wtick());
    put_f64(h + 32, g.t0);
    put_u32(h + 40, MKTRACE_RECORD_BYTES);
    write_all(h, sizeof h);
    mkt_unwind warm;
    warm.n = 0;
    _Unwind_Backtrace(unwind_step, &warm); /* loads the unwind tables now, not in the first traced call */
    g.owner = pthread_self();
    g.active = 1;
    for (int i = 0; i < MKT_SIGNALS; ++i) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(mkt_signals[i], &sa, &g.old[i]);
    }
    return 1;
}

/* record the end call and write the footer (signals held so the handler cannot write a second one) */
static void finish(int kind, uint64_t site, uint32_t status, int32_t detail)
{
    if (!g.active) return;
    double t = enter();
    emit(kind, t, t, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
    sigset_t block, old;
    sigemptyset(&block);
    for (int i = 0; i < MKT_SIGNALS; ++i) sigaddset(&block, mkt_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &old);
    g.active = 0;
    g.closed = 1;
    write_footer(status, detail);
    if (getenv("MKTRACE_STATS"))
        fprintf(stderr, "mktrace: rank %d: %llu records, %zu call sites, %llu unwinds, %llu memoised\n", g.rank,
                (unsigned long long)g.total, g.nsites, (unsigned long long)g.unwinds,
                (unsigned long long)g.memo_hits);
    for (int i = 0; i < MKT_SIGNALS; ++i) sigaction(mkt_signals[i], &g.old[i], NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* ---------- annotations (mktrace.h): regions and loops ---------- */

/* the id of an annotation name: the pointer first (string literals are passed again and again), then
 * the text; -1 when the table is full or the name is unusable */
static int32_t name_id(const char *name)
{
    if (!name) name = "";
    for (size_t i = 0; i < g.nnames; ++i)
        if (g.name_keys[i] == name) return (int32_t)i;
    size_t len = strnlen(name, MKTRACE_MAX_NAME_BYTES + 1);
    if (len > MKTRACE_MAX_NAME_BYTES) len = MKTRACE_MAX_NAME_BYTES;
    for (size_t i = 0; i < g.nnames; ++i)
        if (strncmp(g.names[i], name, len) == 0 && g.names[i][len] == '\0') return (int32_t)i;
    if (g.nnames == MKT_NAME_CAP) return MKTRACE_NONE;
    char *copy = strndup(name, len);
    if (!copy) return MKTRACE_NONE;
    g.names[g.nnames] = copy;
    g.name_keys[g.nnames] = name;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    return (int32_t)g.nnames++;
}

static void annotate(int kind, const char *name, int64_t iteration, uint64_t site)
{
    if (!g.active) return;
    double t = enter();
    emit(kind, t, t, site, MKTRACE_NONE, name_id(name), iteration, 0, MKTRACE_NONE, 0);
}

void mktrace_region_begin(const char *name) { annotate(MKT_REGION_BEGIN, name, 0, SITE()); }
void mktrace_region_end(const char *name) { annotate(MKT_REGION_END, name, 0, SITE()); }

void mktrace_loop_begin(const char *name)
{
    if (g.loop_depth < MKT_LOOP_DEPTH) g.loop_iter[g.loop_depth] = 0;
    ++g.loop_depth;
    annotate(MKT_LOOP_BEGIN, name, 0, SITE());
}

void mktrace_loop_iter(const char *name)
{
    int64_t i = 0;
    if (g.loop_depth > 0 && g.loop_depth <= MKT_LOOP_DEPTH) i = (int64_t)g.loop_iter[g.loop_depth - 1]++;
    annotate(MKT_LOOP_ITER, name, i, SITE());
}

void mktrace_loop_end(const char *name)
{
    int64_t n = 0;
    if (g.loop_depth > 0 && g.loop_depth <= MKT_LOOP_DEPTH) n = (int64_t)g.loop_iter[g.loop_depth - 1];
    if (g.loop_depth > 0) --g.loop_depth;
    annotate(MKT_LOOP_END, name, n, SITE());
}

/* ---------- the wrappers ---------- */

int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS && start())
        emit(MKT_INIT, 0.0, 0.0, SITE(), MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS && start())
        emit(MKT_INIT_THREAD, 0.0, 0.0, SITE(), MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
    return rc;
}

int MPI_Finalize(void)
{
    finish(MKT_FINALIZE, SITE(), MKTRACE_STATUS_FINALIZED, 0);
    return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
    finish(MKT_ABORT, SITE(), MKTRACE_STATUS_ABORTED, errorcode);
    return PMPI_Abort(comm, errorcode);
}

#define P2P_SEND(NAME, KIND)                                                                             \
    int NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)          \
    {                                                                                                  \
        if (!g.active) return P##NAME(buf, count, type, dest, tag, comm);                              \
        uint64_t site = SITE();                                                                        \
        double te = enter();                                                                             \
        int rc = P##NAME(buf, count, type, dest, tag, comm);                                           \
        int ci = comm_index(comm);                                                                     \
        emit(KIND, te, now(), site, to_world(ci, dest), tag, tbytes(count, type), comm_id(ci),         \
             MKTRACE_NONE, 0);                                                                         \
        return rc;                                                                                     \
    }

P2P_SEND(MPI_Send, MKT_SEND)
P2P_SEND(MPI_Ssend, MKT_SSEND)
P2P_SEND(MPI_Bsend, MKT_BSEND)
P2P_SEND(MPI_Rsend, MKT_RSEND)

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (!g.active) return PMPI_Recv(buf, count, type, source, tag, comm, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Recv(buf, count, type, source, tag, comm, st);
    int ci = comm_index(comm);
    int32_t peer = to_world(ci, source), rtag = tag_of(tag);
    int64_t bytes = tbytes(count, type);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
        int c = 0;
        if (source == MPI_ANY_SOURCE) peer = to_world(ci, st->MPI_SOURCE);
        rtag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &c) == MPI_SUCCESS && c != MPI_UNDEFINED) bytes = c;
    }
    g.flags_next = posted(source, tag);
    emit(MKT_RECV, te, now(), site, peer, rtag, bytes, comm_id(ci), MKTRACE_NONE, 0);
    return rc;
}

#define P2P_ISEND(NAME, KIND)                                                                            \
    int NAME(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,           \
             MPI_Request *req)                                                                         \
    {                                                                                                  \
        if (!g.active) return P##NAME(buf, count, type, dest, tag, comm, req);                         \
        uint64_t site = SITE();                                                                        \
        double te = enter();                                                                             \
        int rc = P##NAME(buf, count, type, dest, tag, comm, req);                                      \
        int ci = comm_index(comm);                                                                     \
        int32_t peer = to_world(ci, dest);                                                             \
        int64_t bytes = tbytes(count, type);                                                           \
        uint32_t id = rc == MPI_SUCCESS ? new_request(*req, 0, ci, peer, tag, bytes) : 0;              \
        emit(KIND, te, now(), site, peer, tag, bytes, comm_id(ci), MKTRACE_NONE, id);                  \
        return rc;                                                                                     \
    }

P2P_ISEND(MPI_Isend, MKT_ISEND)
P2P_ISEND(MPI_Issend, MKT_ISSEND)

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
    if (!g.active) return PMPI_Irecv(buf, count, type, source, tag, comm, req);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Irecv(buf, count, type, source, tag, comm, req);
    int ci = comm_index(comm);
    int32_t peer = to_world(ci, source);
    int64_t bytes = tbytes(count, type);
    uint32_t id = rc == MPI_SUCCESS ? new_request(*req, 1, ci, peer, tag_of(tag), bytes) : 0;
    emit(MKT_IRECV, te, now(), site, peer, tag_of(tag), bytes, comm_id(ci), MKTRACE_NONE, id);
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
    if (!g.active)
        return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, st);
    double tx = now();
    int ci = comm_index(comm);
    emit(MKT_SENDRECV, te, tx, site, to_world(ci, dest), stag, tbytes(scount, stype), comm_id(ci),
         MKTRACE_NONE, 0);
    int32_t peer = to_world(ci, source), tag = tag_of(rtag);
    int64_t bytes = tbytes(rcount, rtype);
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
        int c = 0;
        if (source == MPI_ANY_SOURCE) peer = to_world(ci, st->MPI_SOURCE);
        tag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &c) == MPI_SUCCESS && c != MPI_UNDEFINED) bytes = c;
    }
    g.flags_next = posted(source, rtag);
    emit(MKT_COMPLETE, te, tx, site, peer, tag, bytes, comm_id(ci), 1, 0); /* the receive half */
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    if (!g.active) return PMPI_Wait(req, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t key = *req == MPI_REQUEST_NULL ? 0 : req_key(*req);
    double te = enter();
    int rc = PMPI_Wait(req, st);
    double tx = now();
    emit(MKT_WAIT, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, key ? 1 : 0, 0);
    if (key && *req == MPI_REQUEST_NULL) complete(key, st, te, tx, site);
    return rc;
}

/* scratch for request keys and statuses of the multi-request calls */
static uint64_t *scratch_keys;
static MPI_Status *scratch_st;
static int *scratch_idx;
static size_t scratch_cap;

static int scratch(int n)
{
    if ((size_t)n <= scratch_cap) return 1;
    size_t cap = (size_t)n < 64 ? 64 : (size_t)n;
    uint64_t *k = realloc(scratch_keys, cap * sizeof *k);
    if (k) scratch_keys = k;
    MPI_Status *s = realloc(scratch_st, cap * sizeof *s);
    if (s) scratch_st = s;
    int *x = realloc(scratch_idx, cap * sizeof *x);
    if (x) scratch_idx = x;
    if (!k || !s || !x) return 0;
    scratch_cap = cap;
    return 1;
}

static void save_keys(int n, const MPI_Request *reqs)
{
    for (int i = 0; i < n; ++i) scratch_keys[i] = reqs[i] == MPI_REQUEST_NULL ? 0 : req_key(reqs[i]);
}

static int32_t live(int n)
{
    int32_t k = 0;
    for (int i = 0; i < n; ++i) k += scratch_keys[i] != 0;
    return k;
}

/* the record of a Waitany/Testany call and the COMPLETE of the request it completed (done: whether it did) */
static void record_any(int kind, double te, double tx, uint64_t site, int done, int index, MPI_Status *st)
{
    emit(kind, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, done, 0);
    if (done) complete(scratch_keys[index], st, te, tx, site);
}

/* the record of a Waitsome/Testsome call and one COMPLETE per traced request it completed */
static void record_some(int kind, double te, double tx, uint64_t site, int outcount, const int *indices, MPI_Status *st)
{
    int32_t done = 0;
    if (outcount != MPI_UNDEFINED)
        for (int k = 0; k < outcount; ++k) done += scratch_keys[indices[k]] != 0;
    emit(kind, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, done, 0);
    if (outcount != MPI_UNDEFINED)
        for (int k = 0; k < outcount; ++k)
            if (scratch_keys[indices[k]]) complete(scratch_keys[indices[k]], &st[k], te, tx, site);
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[])
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Waitall(n, reqs, statuses);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? scratch_st : statuses;
    double te = enter();
    int rc = PMPI_Waitall(n, reqs, st);
    double tx = now();
    emit(MKT_WAITALL, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, live(n), 0);
    for (int i = 0; i < n; ++i)
        if (scratch_keys[i] && reqs[i] == MPI_REQUEST_NULL) complete(scratch_keys[i], &st[i], te, tx, site);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Waitany(n, reqs, index, status);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Waitany(n, reqs, index, st);
    double tx = now();
    int done = *index != MPI_UNDEFINED && scratch_keys[*index] && reqs[*index] == MPI_REQUEST_NULL;
    record_any(MKT_WAITANY, te, tx, site, done, *index, st);
    return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Waitsome(n, reqs, outcount, indices, statuses);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? scratch_st : statuses;
    double te = enter();
    int rc = PMPI_Waitsome(n, reqs, outcount, indices, st);
    record_some(MKT_WAITSOME, te, now(), site, *outcount, indices, st);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    if (!g.active) return PMPI_Test(req, flag, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    uint64_t key = *req == MPI_REQUEST_NULL ? 0 : req_key(*req);
    double te = enter();
    int rc = PMPI_Test(req, flag, st);
    double tx = now();
    int done = key && *flag && *req == MPI_REQUEST_NULL;
    emit(MKT_TEST, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, done, 0);
    if (done) complete(key, st, te, tx, site);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status statuses[])
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Testall(n, reqs, flag, statuses);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? scratch_st : statuses;
    double te = enter();
    int rc = PMPI_Testall(n, reqs, flag, st);
    double tx = now();
    emit(MKT_TESTALL, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, *flag ? live(n) : 0, 0);
    if (*flag)
        for (int i = 0; i < n; ++i)
            if (scratch_keys[i] && reqs[i] == MPI_REQUEST_NULL) complete(scratch_keys[i], &st[i], te, tx, site);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Testany(n, reqs, index, flag, status);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Testany(n, reqs, index, flag, st);
    double tx = now();
    int done = *flag && *index != MPI_UNDEFINED && *index >= 0 && scratch_keys[*index] && reqs[*index] == MPI_REQUEST_NULL;
    record_any(MKT_TESTANY, te, tx, site, done, *index, st);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[])
{
    if (!g.active || n < 0 || !scratch(n)) return PMPI_Testsome(n, reqs, outcount, indices, statuses);
    uint64_t site = SITE();
    save_keys(n, reqs);
    MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? scratch_st : statuses;
    double te = enter();
    int rc = PMPI_Testsome(n, reqs, outcount, indices, st);
    record_some(MKT_TESTSOME, te, now(), site, *outcount, indices, st);
    return rc;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    if (!g.active) return PMPI_Probe(source, tag, comm, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Probe(source, tag, comm, st);
    int ci = comm_index(comm);
    int32_t peer = to_world(ci, source), rtag = tag_of(tag);
    int c = 0;
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL) {
        if (source == MPI_ANY_SOURCE) peer = to_world(ci, st->MPI_SOURCE);
        rtag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &c) != MPI_SUCCESS || c == MPI_UNDEFINED) c = 0;
    }
    g.flags_next = posted(source, tag);
    emit(MKT_PROBE, te, now(), site, peer, rtag, c, comm_id(ci), 1, 0);
    return rc;
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    if (!g.active) return PMPI_Iprobe(source, tag, comm, flag, status);
    uint64_t site = SITE();
    MPI_Status own;
    MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
    double te = enter();
    int rc = PMPI_Iprobe(source, tag, comm, flag, st);
    int ci = comm_index(comm);
    int32_t peer = to_world(ci, source), rtag = tag_of(tag);
    int c = 0;
    if (rc == MPI_SUCCESS && *flag && source != MPI_PROC_NULL) {
        if (source == MPI_ANY_SOURCE) peer = to_world(ci, st->MPI_SOURCE);
        rtag = st->MPI_TAG;
        if (PMPI_Get_count(st, MPI_BYTE, &c) != MPI_SUCCESS || c == MPI_UNDEFINED) c = 0;
    }
    g.flags_next = posted(source, tag);
    emit(MKT_IPROBE, te, now(), site, peer, rtag, c, comm_id(ci), *flag ? 1 : 0, 0);
    return rc;
}

/* not recorded, but forgets the request so that a recycled handle is not taken for it */
int MPI_Request_free(MPI_Request *req)
{
    if (g.active && *req != MPI_REQUEST_NULL) req_take(req_key(*req));
    return PMPI_Request_free(req);
}

/* ---------- collectives ---------- */

static void coll(int kind, double te, uint64_t site, MPI_Comm comm, int64_t bytes, int root)
{
    int ci = comm_index(comm);
    int32_t r = root < 0 ? MKTRACE_NONE : to_world(ci, root);
    /* the root group of an intercommunicator (SMPI, which has none, defines MPI_ROOT as 0, a valid root) */
    int inter = 0;
    if (root == MPI_ROOT && comm != MPI_COMM_NULL) PMPI_Comm_test_inter(comm, &inter);
    if (inter) r = g.rank;
    emit(kind, te, now(), site, MKTRACE_NONE, MKTRACE_NONE, bytes, comm_id(ci), r, 0);
}

static int comm_size_of(MPI_Comm comm)
{
    int s = 0;
    PMPI_Comm_size(comm, &s);
    return s;
}

static int comm_rank_of(MPI_Comm comm)
{
    int r = 0;
    PMPI_Comm_rank(comm, &r);
    return r;
}

static int64_t sum_counts(const int *counts, int n, MPI_Datatype t)
{
    int64_t s = 0;
    for (int i = 0; i < n; ++i) s += tbytes(counts[i], t);
    return s;
}

int MPI_Barrier(MPI_Comm comm)
{
    if (!g.active) return PMPI_Barrier(comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Barrier(comm);
    coll(MKT_BARRIER, te, site, comm, 0, -1);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Bcast(buf, count, type, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    coll(MKT_BCAST, te, site, comm, tbytes(count, type), root);
    return rc;
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
    coll(MKT_REDUCE, te, site, comm, tbytes(count, type), root);
    return rc;
}

/* the reductions that have no root and the same arguments: allreduce, scan, exscan */
#define COLL_REDUCTION(NAME, KIND)                                                                      \
    int NAME(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)     \
    {                                                                                                  \
        if (!g.active) return P##NAME(sbuf, rbuf, count, type, op, comm);                              \
        uint64_t site = SITE();                                                                        \
        double te = enter();                                                                           \
        int rc = P##NAME(sbuf, rbuf, count, type, op, comm);                                           \
        coll(KIND, te, site, comm, tbytes(count, type), -1);                                           \
        return rc;                                                                                     \
    }

COLL_REDUCTION(MPI_Allreduce, MKT_ALLREDUCE)
COLL_REDUCTION(MPI_Scan, MKT_SCAN)
COLL_REDUCTION(MPI_Exscan, MKT_EXSCAN)

int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op,
                       MPI_Comm comm)
{
    if (!g.active) return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
    coll(MKT_REDUCE_SCATTER, te, site, comm, sum_counts(rcounts, comm_size_of(comm), type), -1);
    return rc;
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
               int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    coll(MKT_GATHER, te, site, comm, sbuf == MPI_IN_PLACE ? tbytes(rcount, rtype) : tbytes(scount, stype), root);
    return rc;
}

int MPI_Gatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                const int displs[], MPI_Datatype rtype, int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
    int64_t b = sbuf == MPI_IN_PLACE ? tbytes(rcounts[comm_rank_of(comm)], rtype) : tbytes(scount, stype);
    coll(MKT_GATHERV, te, site, comm, b, root);
    return rc;
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
    coll(MKT_SCATTER, te, site, comm, rbuf == MPI_IN_PLACE ? tbytes(scount, stype) : tbytes(rcount, rtype), root);
    return rc;
}

int MPI_Scatterv(const void *sbuf, const int scounts[], const int displs[], MPI_Datatype stype, void *rbuf,
                 int rcount, MPI_Datatype rtype, int root, MPI_Comm comm)
{
    if (!g.active) return PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Scatterv(sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm);
    int64_t b = comm_rank_of(comm) == root ? sum_counts(scounts, comm_size_of(comm), stype) : tbytes(rcount, rtype);
    coll(MKT_SCATTERV, te, site, comm, b, root);
    return rc;
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    if (!g.active) return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    coll(MKT_ALLGATHER, te, site, comm, sbuf == MPI_IN_PLACE ? tbytes(rcount, rtype) : tbytes(scount, stype), -1);
    return rc;
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int rcounts[],
                   const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    if (!g.active) return PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm);
    int64_t b = sbuf == MPI_IN_PLACE ? tbytes(rcounts[comm_rank_of(comm)], rtype) : tbytes(scount, stype);
    coll(MKT_ALLGATHERV, te, site, comm, b, -1);
    return rc;
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm)
{
    if (!g.active) return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    int64_t block = sbuf == MPI_IN_PLACE ? tbytes(rcount, rtype) : tbytes(scount, stype);
    coll(MKT_ALLTOALL, te, site, comm, block * comm_size_of(comm), -1);
    return rc;
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm)
{
    if (!g.active) return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    int n = comm_size_of(comm);
    int64_t b = sbuf == MPI_IN_PLACE ? sum_counts(rcounts, n, rtype) : sum_counts(scounts, n, stype);
    coll(MKT_ALLTOALLV, te, site, comm, b, -1);
    return rc;
}

/* ---------- communicators ---------- */

/* Record a communicator creation (comm = the parent's id, root = the new one's, -1 for MPI_COMM_NULL) with its
 * arguments. Every creation call takes the next id on every rank that makes it, also when it returns
 * MPI_COMM_NULL, so that ids agree across the parent's ranks. `args` has room for the kind's arguments; the
 * new communicator's rank and size are written at args[at_rank], args[at_rank + 1]. */
static void created(int kind, double te, uint64_t site, MPI_Comm parent, MPI_Comm made, int32_t tag, int32_t *args,
                    size_t n, size_t at_rank)
{
    int pi = comm_index(parent);
    const uint32_t fresh = g.next_comm_id++;
    int32_t id = MKTRACE_NONE, new_rank = MKTRACE_NONE, new_size = 0;
    if (made != MPI_COMM_NULL) {
        int ni = add_comm(made, fresh);
        if (ni >= 0) id = (int32_t)g.comms[ni].id;
        PMPI_Comm_rank(made, &new_rank);
        PMPI_Comm_size(made, &new_size);
    }
    if (args && at_rank + 1 < n) {
        args[at_rank] = new_rank;
        args[at_rank + 1] = new_size;
    }
    emit_args(kind, te, now(), site, MKTRACE_NONE, tag, comm_id(pi), id, args, args ? n : 0);
}

/* the recorders shared by the C and Fortran wrappers (arguments as C values) */

static void rec_dup(double te, uint64_t site, MPI_Comm comm, MPI_Comm made)
{
    int32_t *a = args_room(2);
    created(MKT_COMM_DUP, te, site, comm, made, MKTRACE_NONE, a, 2, 0);
}

static void rec_split(double te, uint64_t site, MPI_Comm comm, int color, int key, MPI_Comm made)
{
    int32_t *a = args_room(4);
    if (a) {
        a[0] = color == MPI_UNDEFINED ? MKTRACE_NONE : color;
        a[1] = key;
    }
    created(MKT_COMM_SPLIT, te, site, comm, made, color == MPI_UNDEFINED ? MKTRACE_NONE : color, a, 4, 2);
}

static void rec_cart_create(double te, uint64_t site, MPI_Comm comm, int ndims, const int *dims, const int *periods,
                            int reorder, MPI_Comm made)
{
    const int nd = ndims >= 0 && ndims <= 64 ? ndims : 0;
    int32_t *a = args_room(4 + 2 * (size_t)nd);
    if (a) {
        a[0] = nd;
        a[1] = reorder != 0;
        for (int i = 0; i < nd; ++i) {
            a[4 + i] = dims[i];
            a[4 + nd + i] = periods[i] != 0;
        }
    }
    created(MKT_CART_CREATE, te, site, comm, made, ndims, a, 4 + 2 * (size_t)nd, 2);
}

static void rec_cart_sub(double te, uint64_t site, MPI_Comm comm, const int *remain, MPI_Comm made)
{
    int nd = 0;
    PMPI_Cartdim_get(comm, &nd);
    if (nd < 0 || nd > 64) nd = 0;
    int32_t *a = args_room(3 + (size_t)nd);
    if (a) {
        a[0] = nd;
        for (int i = 0; i < nd; ++i) a[3 + i] = remain[i] != 0;
    }
    created(MKT_CART_SUB, te, site, comm, made, nd, a, 3 + (size_t)nd, 1);
}

/* the world ranks of a group, in its order, at a[0 .. n) (n = its size) */
static int group_members(MPI_Group group, int32_t **out)
{
    int n = 0;
    if (group == MPI_GROUP_NULL || PMPI_Group_size(group, &n) != MPI_SUCCESS || n < 0) return 0;
    int *local = malloc((size_t)(n ? n : 1) * 2 * sizeof(int));
    if (!local) return 0;
    for (int i = 0; i < n; ++i) local[i] = i;
    PMPI_Group_translate_ranks(group, n, local, g.world_group, local + n);
    int32_t *a = malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!a) {
        free(local);
        return 0;
    }
    for (int i = 0; i < n; ++i) a[i] = local[n + i] == MPI_UNDEFINED ? MKTRACE_NONE : local[n + i];
    free(local);
    *out = a;
    return n;
}

static void rec_create(double te, uint64_t site, MPI_Comm comm, MPI_Group group, int has_tag, int tag, MPI_Comm made)
{
    int32_t *members = NULL;
    const int n = group_members(group, &members);
    const size_t head = has_tag ? 4 : 3;
    int32_t *a = args_room(head + (size_t)n);
    if (a) {
        if (has_tag) a[0] = tag;
        a[head - 1] = n;
        for (int i = 0; i < n; ++i) a[head + (size_t)i] = members[i];
    }
    free(members);
    created(has_tag ? MKT_COMM_CREATE_GROUP : MKT_COMM_CREATE, te, site, comm, made, has_tag ? tag : MKTRACE_NONE, a,
            head + (size_t)n, has_tag ? 1 : 0);
}

static void rec_graph(double te, uint64_t site, MPI_Comm comm, int nnodes, const int *index, const int *edges,
                      int reorder, MPI_Comm made)
{
    if (nnodes < 0 || nnodes > (int)MKTRACE_MAX_ARGS / 2) nnodes = 0;
    const int nedges = nnodes > 0 && index[nnodes - 1] >= 0 && index[nnodes - 1] <= (int)MKTRACE_MAX_ARGS / 2 ? index[nnodes - 1] : 0;
    int32_t *a = args_room(4 + (size_t)nnodes + (size_t)nedges);
    if (a) {
        a[0] = nnodes;
        a[1] = reorder != 0;
        for (int i = 0; i < nnodes; ++i) a[4 + i] = index[i];
        for (int i = 0; i < nedges; ++i) a[4 + nnodes + i] = edges[i];
    }
    created(MKT_GRAPH_CREATE, te, site, comm, made, nnodes, a, 4 + (size_t)nnodes + (size_t)nedges, 2);
}

static void rec_dist_adjacent(double te, uint64_t site, MPI_Comm comm, int indeg, const int *sources, int outdeg,
                              const int *dests, int reorder, MPI_Comm made)
{
    if (indeg < 0 || indeg > (int)MKTRACE_MAX_ARGS / 2) indeg = 0;
    if (outdeg < 0 || outdeg > (int)MKTRACE_MAX_ARGS / 2) outdeg = 0;
    const int ci = comm_index(comm);
    int32_t *a = args_room(5 + (size_t)indeg + (size_t)outdeg);
    if (a) {
        a[0] = indeg;
        a[1] = outdeg;
        a[2] = reorder != 0;
        for (int i = 0; i < indeg; ++i) a[5 + i] = to_world(ci, sources[i]);
        for (int i = 0; i < outdeg; ++i) a[5 + indeg + i] = to_world(ci, dests[i]);
    }
    created(MKT_DIST_GRAPH_CREATE_ADJACENT, te, site, comm, made, MKTRACE_NONE, a, 5 + (size_t)indeg + (size_t)outdeg, 3);
}

static void rec_dist(double te, uint64_t site, MPI_Comm comm, int n, const int *sources, const int *degrees,
                     const int *dests, int reorder, MPI_Comm made)
{
    if (n < 0 || n > (int)MKTRACE_MAX_ARGS / 4) n = 0;
    long edges = 0;
    for (int i = 0; i < n; ++i) edges += degrees[i] > 0 ? degrees[i] : 0;
    if (edges > (long)MKTRACE_MAX_ARGS / 2) n = 0, edges = 0;
    const int ci = comm_index(comm);
    int32_t *a = args_room(4 + 2 * (size_t)n + (size_t)edges);
    if (a) {
        a[0] = n;
        a[1] = reorder != 0;
        size_t k = 4 + 2 * (size_t)n;
        for (int i = 0; i < n; ++i) {
            a[4 + i] = to_world(ci, sources[i]);
            a[4 + n + i] = degrees[i] > 0 ? degrees[i] : 0;
        }
        for (long e = 0; e < edges; ++e) a[k + (size_t)e] = to_world(ci, dests[e]);
    }
    created(MKT_DIST_GRAPH_CREATE, te, site, comm, made, MKTRACE_NONE, a, 4 + 2 * (size_t)n + (size_t)edges, 2);
}

static void rec_dims(double te, uint64_t site, int nnodes, int ndims, const int *dims_in, const int *dims)
{
    const int nd = ndims >= 0 && ndims <= 64 ? ndims : 0;
    int32_t *a = args_room(2 + 2 * (size_t)nd);
    if (!a) {
        emit(MKT_DIMS_CREATE, te, now(), site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
        return;
    }
    a[0] = nnodes;
    a[1] = nd;
    for (int i = 0; i < nd; ++i) {
        a[2 + i] = dims_in[i];
        a[2 + nd + i] = dims[i];
    }
    emit_args(MKT_DIMS_CREATE, te, now(), site, MKTRACE_NONE, nd, 0, MKTRACE_NONE, a, 2 + 2 * (size_t)nd);
}

static void rec_shift(double te, uint64_t site, MPI_Comm comm, int direction, int disp, int source, int dest)
{
    const int ci = comm_index(comm);
    int32_t a[4] = {direction, disp, to_world(ci, source), to_world(ci, dest)};
    emit_args(MKT_CART_SHIFT, te, now(), site, a[3], MKTRACE_NONE, comm_id(ci), MKTRACE_NONE, a, 4);
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Comm_dup(comm, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Comm_dup(comm, newcomm);
    rec_dup(te, site, comm, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Comm_split(comm, color, key, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Comm_split(comm, color, key, newcomm);
    rec_split(te, site, comm, color, key, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                    MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
    rec_cart_create(te, site, comm, ndims, dims, periods, reorder, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Cart_sub(comm, remain_dims, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
    rec_cart_sub(te, site, comm, remain_dims, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *source, int *dest)
{
    if (!g.active) return PMPI_Cart_shift(comm, direction, disp, source, dest);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Cart_shift(comm, direction, disp, source, dest);
    if (rc == MPI_SUCCESS) rec_shift(te, site, comm, direction, disp, *source, *dest);
    return rc;
}

int MPI_Dims_create(int nnodes, int ndims, int dims[])
{
    if (!g.active) return PMPI_Dims_create(nnodes, ndims, dims);
    uint64_t site = SITE();
    int in[64];
    const int nd = ndims >= 0 && ndims <= 64 ? ndims : 0;
    for (int i = 0; i < nd; ++i) in[i] = dims[i];
    double te = enter();
    int rc = PMPI_Dims_create(nnodes, ndims, dims);
    if (rc == MPI_SUCCESS) rec_dims(te, site, nnodes, nd, in, dims);
    return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Comm_create(comm, group, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Comm_create(comm, group, newcomm);
    rec_create(te, site, comm, group, 0, 0, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Comm_create_group(comm, group, tag, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
    rec_create(te, site, comm, group, 1, tag, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm);
    rec_graph(te, site, comm, nnodes, index, edges, reorder, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
                                   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
                                   int reorder, MPI_Comm *newcomm)
{
    if (!g.active)
        return PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                               destweights, info, reorder, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
                                             destweights, info, reorder, newcomm);
    rec_dist_adjacent(te, site, comm, indegree, sources, outdegree, destinations, reorder,
                      rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[], const int destinations[],
                          const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
{
    if (!g.active) return PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, newcomm);
    uint64_t site = SITE();
    double te = enter();
    int rc = PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, newcomm);
    rec_dist(te, site, comm, n, sources, degrees, destinations, reorder, rc == MPI_SUCCESS ? *newcomm : MPI_COMM_NULL);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
    if (!g.active) return PMPI_Comm_free(comm);
    uint64_t site = SITE();
    int ci = comm_index(*comm);
    uint32_t id = comm_id(ci);
    double te = enter();
    int rc = PMPI_Comm_free(comm);
    if (ci > 0) g.comms[ci].comm = MPI_COMM_NULL; /* ids are never reused; pending requests keep the ranks */
    emit(MKT_COMM_FREE, te, now(), site, MKTRACE_NONE, MKTRACE_NONE, 0, id, MKTRACE_NONE, 0);
    return rc;
}

/* ---------- Fortran (mpif.h and `use mpi`, gfortran names) ----------
 * OpenMPI's Fortran bindings call PMPI_* directly, so the C wrappers above never see Fortran calls. These
 * wrappers forward to OpenMPI's own Fortran implementation (pmpi_*_, found with dlsym(RTLD_NEXT)) and
 * record from the Fortran arguments. A subset for now (README.md, "Fortran"). */

#define F_STATUS_INTS 16 /* >= MPI_STATUS_SIZE (6 in OpenMPI 4.1) */

static MPI_Fint *f_status_ignore(void)
{
    static MPI_Fint *p;
    if (!p) p = dlsym(RTLD_DEFAULT, "mpi_fortran_status_ignore_");
    return p;
}

static MPI_Fint *f_statuses_ignore(void)
{
    static MPI_Fint *p;
    if (!p) p = dlsym(RTLD_DEFAULT, "mpi_fortran_statuses_ignore_");
    return p;
}

/* resolve OpenMPI's implementation of a Fortran call once (the POSIX idiom for dlsym to a function) */
#define F_REAL(fn, proto)                                                     \
    static void(*fn) proto;                                                   \
    if (!fn) {                                                                \
        *(void **)(&fn) = dlsym(RTLD_NEXT, #fn);                              \
        if (!fn) {                                                            \
            fprintf(stderr, "mktrace: %s not found in the MPI library\n", #fn); \
            abort();                                                          \
        }                                                                     \
    }

/* source, tag and byte count of a Fortran status */
static void f_status_info(const MPI_Fint *fst, int *source, int *tag, int *bytes)
{
    MPI_Status st;
    PMPI_Status_f2c(fst, &st);
    *source = st.MPI_SOURCE;
    *tag = st.MPI_TAG;
    if (PMPI_Get_count(&st, MPI_BYTE, bytes) != MPI_SUCCESS || *bytes == MPI_UNDEFINED) *bytes = -1;
}

void mpi_init_(MPI_Fint *ierr)
{
    F_REAL(pmpi_init_, (MPI_Fint *))
    pmpi_init_(ierr);
    if (*ierr == MPI_SUCCESS && start())
        emit(MKT_INIT, 0.0, 0.0, SITE(), MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
}

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    F_REAL(pmpi_init_thread_, (MPI_Fint *, MPI_Fint *, MPI_Fint *))
    pmpi_init_thread_(required, provided, ierr);
    if (*ierr == MPI_SUCCESS && start())
        emit(MKT_INIT_THREAD, 0.0, 0.0, SITE(), MKTRACE_NONE, MKTRACE_NONE, 0, 0, MKTRACE_NONE, 0);
}

void mpi_finalize_(MPI_Fint *ierr)
{
    F_REAL(pmpi_finalize_, (MPI_Fint *))
    finish(MKT_FINALIZE, SITE(), MKTRACE_STATUS_FINALIZED, 0);
    pmpi_finalize_(ierr);
}

void mpi_abort_(MPI_Fint *comm, MPI_Fint *code, MPI_Fint *ierr)
{
    F_REAL(pmpi_abort_, (MPI_Fint *, MPI_Fint *, MPI_Fint *))
    finish(MKT_ABORT, SITE(), MKTRACE_STATUS_ABORTED, *code);
    pmpi_abort_(comm, code, ierr);
}

#define F_SEND(fname, real, KIND)                                                                        \
    void fname(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *dest, MPI_Fint *tag, MPI_Fint *comm, \
               MPI_Fint *ierr)                                                                          \
    {                                                                                                   \
        F_REAL(real, (void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))  \
        if (!g.active) { real(buf, count, type, dest, tag, comm, ierr); return; }                       \
        uint64_t site = SITE();                                                                         \
        double te = enter();                                                                              \
        real(buf, count, type, dest, tag, comm, ierr);                                                  \
        int ci = comm_index(PMPI_Comm_f2c(*comm));                                                      \
        emit(KIND, te, now(), site, to_world(ci, *dest), *tag, tbytes(*count, PMPI_Type_f2c(*type)),   \
             comm_id(ci), MKTRACE_NONE, 0);                                                             \
    }

F_SEND(mpi_send_, pmpi_send_, MKT_SEND)
F_SEND(mpi_ssend_, pmpi_ssend_, MKT_SSEND)

void mpi_recv_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm,
               MPI_Fint *status, MPI_Fint *ierr)
{
    F_REAL(pmpi_recv_, (void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_recv_(buf, count, type, source, tag, comm, status, ierr); return; }
    uint64_t site = SITE();
    MPI_Fint own[F_STATUS_INTS];
    double te = enter();
    pmpi_recv_(buf, count, type, source, tag, comm, own, ierr);
    if (status != f_status_ignore()) memcpy(status, own, sizeof(MPI_Status));
    int ci = comm_index(PMPI_Comm_f2c(*comm));
    int src = *source, rtag = *tag, b = -1;
    if (*ierr == MPI_SUCCESS && *source != MPI_PROC_NULL) f_status_info(own, &src, &rtag, &b);
    g.flags_next = posted((int)*source, (int)*tag);
    emit(MKT_RECV, te, now(), site, to_world(ci, src), tag_of(rtag),
         b >= 0 ? b : tbytes(*count, PMPI_Type_f2c(*type)), comm_id(ci), MKTRACE_NONE, 0);
}

#define F_ISEND(fname, real, KIND, IS_RECV)                                                                \
    void fname(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *peer, MPI_Fint *tag, MPI_Fint *comm,  \
               MPI_Fint *req, MPI_Fint *ierr)                                                            \
    {                                                                                                    \
        F_REAL(real, (void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,    \
                      MPI_Fint *))                                                                       \
        if (!g.active) { real(buf, count, type, peer, tag, comm, req, ierr); return; }                   \
        uint64_t site = SITE();                                                                          \
        double te = enter();                                                                               \
        real(buf, count, type, peer, tag, comm, req, ierr);                                              \
        int ci = comm_index(PMPI_Comm_f2c(*comm));                                                       \
        int32_t p = to_world(ci, *peer), t = tag_of(*tag);                                               \
        int64_t bytes = tbytes(*count, PMPI_Type_f2c(*type));                                            \
        uint32_t id = *ierr == MPI_SUCCESS ? new_request(PMPI_Request_f2c(*req), IS_RECV, ci, p, t, bytes) : 0; \
        emit(KIND, te, now(), site, p, t, bytes, comm_id(ci), MKTRACE_NONE, id);                         \
    }

F_ISEND(mpi_isend_, pmpi_isend_, MKT_ISEND, 0)
F_ISEND(mpi_irecv_, pmpi_irecv_, MKT_IRECV, 1)

/* a COMPLETE record from a Fortran status */
static void f_complete(uint64_t key, const MPI_Fint *fst, double te, double tx, uint64_t site)
{
    MPI_Status st;
    PMPI_Status_f2c(fst, &st);
    complete(key, &st, te, tx, site);
}

void mpi_wait_(MPI_Fint *req, MPI_Fint *status, MPI_Fint *ierr)
{
    F_REAL(pmpi_wait_, (MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_wait_(req, status, ierr); return; }
    uint64_t site = SITE();
    MPI_Request c = PMPI_Request_f2c(*req);
    uint64_t key = c == MPI_REQUEST_NULL ? 0 : req_key(c);
    MPI_Fint own[F_STATUS_INTS];
    double te = enter();
    pmpi_wait_(req, own, ierr);
    double tx = now();
    if (status != f_status_ignore()) memcpy(status, own, sizeof(MPI_Status));
    emit(MKT_WAIT, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, key ? 1 : 0, 0);
    if (key && *ierr == MPI_SUCCESS) f_complete(key, own, te, tx, site);
}

void mpi_waitall_(MPI_Fint *count, MPI_Fint *reqs, MPI_Fint *statuses, MPI_Fint *ierr)
{
    F_REAL(pmpi_waitall_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    int n = *count;
    size_t per = sizeof(MPI_Status) / sizeof(MPI_Fint);
    MPI_Fint *own = n > 0 && g.active ? malloc((size_t)n * per * sizeof(MPI_Fint)) : NULL;
    if (!g.active || n <= 0 || !own || !scratch(n)) {
        free(own);
        pmpi_waitall_(count, reqs, statuses, ierr);
        return;
    }
    uint64_t site = SITE();
    for (int i = 0; i < n; ++i) {
        MPI_Request c = PMPI_Request_f2c(reqs[i]);
        scratch_keys[i] = c == MPI_REQUEST_NULL ? 0 : req_key(c);
    }
    double te = enter();
    pmpi_waitall_(count, reqs, own, ierr);
    double tx = now();
    if (statuses != f_statuses_ignore()) memcpy(statuses, own, (size_t)n * per * sizeof(MPI_Fint));
    emit(MKT_WAITALL, te, tx, site, MKTRACE_NONE, MKTRACE_NONE, 0, 0, live(n), 0);
    if (*ierr == MPI_SUCCESS)
        for (int i = 0; i < n; ++i)
            if (scratch_keys[i]) f_complete(scratch_keys[i], own + (size_t)i * per, te, tx, site);
    free(own);
}

void mpi_barrier_(MPI_Fint *comm, MPI_Fint *ierr)
{
    F_REAL(pmpi_barrier_, (MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_barrier_(comm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_barrier_(comm, ierr);
    coll(MKT_BARRIER, te, site, PMPI_Comm_f2c(*comm), 0, -1);
}

void mpi_bcast_(void *buf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    F_REAL(pmpi_bcast_, (void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_bcast_(buf, count, type, root, comm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_bcast_(buf, count, type, root, comm, ierr);
    coll(MKT_BCAST, te, site, PMPI_Comm_f2c(*comm), tbytes(*count, PMPI_Type_f2c(*type)), *root);
}

void mpi_reduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *root,
                 MPI_Fint *comm, MPI_Fint *ierr)
{
    F_REAL(pmpi_reduce_, (void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_reduce_(sbuf, rbuf, count, type, op, root, comm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_reduce_(sbuf, rbuf, count, type, op, root, comm, ierr);
    coll(MKT_REDUCE, te, site, PMPI_Comm_f2c(*comm), tbytes(*count, PMPI_Type_f2c(*type)), *root);
}

void mpi_allreduce_(void *sbuf, void *rbuf, MPI_Fint *count, MPI_Fint *type, MPI_Fint *op, MPI_Fint *comm,
                    MPI_Fint *ierr)
{
    F_REAL(pmpi_allreduce_, (void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_allreduce_(sbuf, rbuf, count, type, op, comm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_allreduce_(sbuf, rbuf, count, type, op, comm, ierr);
    coll(MKT_ALLREDUCE, te, site, PMPI_Comm_f2c(*comm), tbytes(*count, PMPI_Type_f2c(*type)), -1);
}

/* communicators and topologies (Fortran): the same recorders as the C wrappers, from the Fortran arguments
 * (LOGICAL arguments are non-zero for .true.) */

void mpi_comm_dup_(MPI_Fint *comm, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_comm_dup_, (MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_comm_dup_(comm, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_comm_dup_(comm, newcomm, ierr);
    rec_dup(te, site, PMPI_Comm_f2c(*comm), *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_comm_split_(MPI_Fint *comm, MPI_Fint *color, MPI_Fint *key, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_comm_split_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_comm_split_(comm, color, key, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_comm_split_(comm, color, key, newcomm, ierr);
    rec_split(te, site, PMPI_Comm_f2c(*comm), *color, *key, *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_cart_create_(MPI_Fint *comm, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *periods, MPI_Fint *reorder,
                      MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_cart_create_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_cart_create_(comm, ndims, dims, periods, reorder, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_cart_create_(comm, ndims, dims, periods, reorder, newcomm, ierr);
    rec_cart_create(te, site, PMPI_Comm_f2c(*comm), *ndims, dims, periods, *reorder,
                    *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_cart_sub_(MPI_Fint *comm, MPI_Fint *remain, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_cart_sub_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_cart_sub_(comm, remain, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_cart_sub_(comm, remain, newcomm, ierr);
    rec_cart_sub(te, site, PMPI_Comm_f2c(*comm), remain, *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_cart_shift_(MPI_Fint *comm, MPI_Fint *direction, MPI_Fint *disp, MPI_Fint *source, MPI_Fint *dest, MPI_Fint *ierr)
{
    F_REAL(pmpi_cart_shift_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_cart_shift_(comm, direction, disp, source, dest, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_cart_shift_(comm, direction, disp, source, dest, ierr);
    if (*ierr == MPI_SUCCESS) rec_shift(te, site, PMPI_Comm_f2c(*comm), *direction, *disp, *source, *dest);
}

void mpi_dims_create_(MPI_Fint *nnodes, MPI_Fint *ndims, MPI_Fint *dims, MPI_Fint *ierr)
{
    F_REAL(pmpi_dims_create_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_dims_create_(nnodes, ndims, dims, ierr); return; }
    uint64_t site = SITE();
    int in[64];
    const int nd = *ndims >= 0 && *ndims <= 64 ? *ndims : 0;
    for (int i = 0; i < nd; ++i) in[i] = dims[i];
    double te = enter();
    pmpi_dims_create_(nnodes, ndims, dims, ierr);
    if (*ierr == MPI_SUCCESS) rec_dims(te, site, *nnodes, nd, in, dims);
}

void mpi_comm_create_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_comm_create_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_comm_create_(comm, group, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_comm_create_(comm, group, newcomm, ierr);
    rec_create(te, site, PMPI_Comm_f2c(*comm), PMPI_Group_f2c(*group), 0, 0,
               *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_comm_create_group_(MPI_Fint *comm, MPI_Fint *group, MPI_Fint *tag, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_comm_create_group_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_comm_create_group_(comm, group, tag, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_comm_create_group_(comm, group, tag, newcomm, ierr);
    rec_create(te, site, PMPI_Comm_f2c(*comm), PMPI_Group_f2c(*group), 1, *tag,
               *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_graph_create_(MPI_Fint *comm, MPI_Fint *nnodes, MPI_Fint *index, MPI_Fint *edges, MPI_Fint *reorder,
                       MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_graph_create_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_graph_create_(comm, nnodes, index, edges, reorder, newcomm, ierr); return; }
    uint64_t site = SITE();
    double te = enter();
    pmpi_graph_create_(comm, nnodes, index, edges, reorder, newcomm, ierr);
    rec_graph(te, site, PMPI_Comm_f2c(*comm), *nnodes, index, edges, *reorder,
              *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_dist_graph_create_adjacent_(MPI_Fint *comm, MPI_Fint *indegree, MPI_Fint *sources, MPI_Fint *sourceweights,
                                     MPI_Fint *outdegree, MPI_Fint *destinations, MPI_Fint *destweights, MPI_Fint *info,
                                     MPI_Fint *reorder, MPI_Fint *newcomm, MPI_Fint *ierr)
{
    F_REAL(pmpi_dist_graph_create_adjacent_, (MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *,
                                              MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *))
    if (!g.active) {
        pmpi_dist_graph_create_adjacent_(comm, indegree, sources, sourceweights, outdegree, destinations, destweights,
                                         info, reorder, newcomm, ierr);
        return;
    }
    uint64_t site = SITE();
    double te = enter();
    pmpi_dist_graph_create_adjacent_(comm, indegree, sources, sourceweights, outdegree, destinations, destweights, info,
                                     reorder, newcomm, ierr);
    rec_dist_adjacent(te, site, PMPI_Comm_f2c(*comm), *indegree, sources, *outdegree, destinations, *reorder,
                      *ierr == MPI_SUCCESS ? PMPI_Comm_f2c(*newcomm) : MPI_COMM_NULL);
}

void mpi_comm_free_(MPI_Fint *comm, MPI_Fint *ierr)
{
    F_REAL(pmpi_comm_free_, (MPI_Fint *, MPI_Fint *))
    if (!g.active) { pmpi_comm_free_(comm, ierr); return; }
    uint64_t site = SITE();
    int ci = comm_index(PMPI_Comm_f2c(*comm));
    uint32_t id = comm_id(ci);
    double te = enter();
    pmpi_comm_free_(comm, ierr);
    if (ci > 0) g.comms[ci].comm = MPI_COMM_NULL;
    emit(MKT_COMM_FREE, te, now(), site, MKTRACE_NONE, MKTRACE_NONE, 0, id, MKTRACE_NONE, 0);
}
