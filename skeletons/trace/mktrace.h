/* mktrace.h: optional annotations of an MPI program's structure for the mksim tracer (libmktrace.so).
 *
 * Regions (a routine, a solver phase) and loops (a time-step loop) marked here become ROUTINE and LOOP
 * nodes of the skeleton builder's parse tree; without them, structure comes from call sites alone.
 *
 *   #include "mktrace.h"
 *   MKTRACE_REGION_BEGIN("solve");
 *   MKTRACE_LOOP_BEGIN("timestep");
 *   for (int s = 0; s < steps; ++s) {
 *       MKTRACE_LOOP_ITER("timestep");      // at the start of every iteration
 *       exchange(); compute();
 *   }
 *   MKTRACE_LOOP_END("timestep");
 *   MKTRACE_REGION_END("solve");
 *
 * C++ also has scoped forms: `mktrace::region r("solve");`, `mktrace::loop l("timestep"); ... l.iter();`.
 *
 * Rules: begin and end of a region or loop are called with the same name, properly nested, between
 * MPI_Init and MPI_Finalize (calls outside are ignored); names are up to 4096 bytes (longer ones are
 * cut), and a program has at most 4096 distinct names. The reader rejects a trace whose annotations do
 * not nest, naming the record.
 *
 * The program needs no link dependency: the functions are weak references, defined only when the program
 * runs under the tracer (LD_PRELOAD=libmktrace.so), and the macros do nothing otherwise (also under
 * SMPI). Define MKTRACE_DISABLE to compile the annotations away entirely. */
#ifndef MKTRACE_H
#define MKTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(MKTRACE_DISABLE) && (defined(__GNUC__) || defined(__clang__))
void mktrace_region_begin(const char *name) __attribute__((weak));
void mktrace_region_end(const char *name) __attribute__((weak));
void mktrace_loop_begin(const char *name) __attribute__((weak));
void mktrace_loop_iter(const char *name) __attribute__((weak));
void mktrace_loop_end(const char *name) __attribute__((weak));
#define MKTRACE_CALL_(fn, name) \
    do {                        \
        if (fn) fn(name);       \
    } while (0)
#else
#define MKTRACE_CALL_(fn, name) \
    do {                        \
        (void)(name);           \
    } while (0)
#endif

/** Enter a region (a routine or phase) named NAME. */
#define MKTRACE_REGION_BEGIN(name) MKTRACE_CALL_(mktrace_region_begin, name)
/** Leave the innermost region; NAME must be the one it was entered with. */
#define MKTRACE_REGION_END(name) MKTRACE_CALL_(mktrace_region_end, name)
/** Enter a loop named NAME (before its first iteration). */
#define MKTRACE_LOOP_BEGIN(name) MKTRACE_CALL_(mktrace_loop_begin, name)
/** Start the next iteration of the innermost loop (first thing in the loop body). */
#define MKTRACE_LOOP_ITER(name) MKTRACE_CALL_(mktrace_loop_iter, name)
/** Leave the innermost loop (after its last iteration). */
#define MKTRACE_LOOP_END(name) MKTRACE_CALL_(mktrace_loop_end, name)

#ifdef __cplusplus
}

namespace mktrace {

/** A region for the lifetime of the object. */
class region {
 public:
    explicit region(const char *name) : name_(name) { MKTRACE_REGION_BEGIN(name_); }
    ~region() { MKTRACE_REGION_END(name_); }
    region(const region &) = delete;
    region &operator=(const region &) = delete;

 private:
    const char *name_;
};

/** A loop for the lifetime of the object; call iter() at the start of every iteration. */
class loop {
 public:
    explicit loop(const char *name) : name_(name) { MKTRACE_LOOP_BEGIN(name_); }
    ~loop() { MKTRACE_LOOP_END(name_); }
    void iter() const { MKTRACE_LOOP_ITER(name_); }
    loop(const loop &) = delete;
    loop &operator=(const loop &) = delete;

 private:
    const char *name_;
};

}  // namespace mktrace
#endif

#endif
