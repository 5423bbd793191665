/* The kinds of trace record, listed once and shared by the C tracer (mktrace.c) and the C++ reader
 * (trace.hpp): X(NAME, code, "mpi name"). Codes are part of the format (README.md): never renumber,
 * only append. */
#ifndef MKSIM_TRACE_KINDS_H
#define MKSIM_TRACE_KINDS_H

#define MKTRACE_KINDS(X)                         \
    X(INIT, 1, "MPI_Init")                       \
    X(INIT_THREAD, 2, "MPI_Init_thread")         \
    X(FINALIZE, 3, "MPI_Finalize")               \
    X(ABORT, 4, "MPI_Abort")                     \
    X(SEND, 10, "MPI_Send")                      \
    X(SSEND, 11, "MPI_Ssend")                    \
    X(BSEND, 12, "MPI_Bsend")                    \
    X(RSEND, 13, "MPI_Rsend")                    \
    X(RECV, 14, "MPI_Recv")                      \
    X(ISEND, 15, "MPI_Isend")                    \
    X(ISSEND, 16, "MPI_Issend")                  \
    X(IRECV, 17, "MPI_Irecv")                    \
    X(SENDRECV, 18, "MPI_Sendrecv")              \
    X(TESTSOME, 19, "MPI_Testsome")              \
    X(WAIT, 20, "MPI_Wait")                      \
    X(WAITALL, 21, "MPI_Waitall")                \
    X(WAITANY, 22, "MPI_Waitany")                \
    X(WAITSOME, 23, "MPI_Waitsome")              \
    X(TEST, 24, "MPI_Test")                      \
    X(TESTALL, 25, "MPI_Testall")                \
    X(PROBE, 26, "MPI_Probe")                    \
    X(IPROBE, 27, "MPI_Iprobe")                  \
    X(TESTANY, 28, "MPI_Testany")                \
    X(COMPLETE, 29, "completion")                \
    X(BARRIER, 30, "MPI_Barrier")                \
    X(BCAST, 31, "MPI_Bcast")                    \
    X(REDUCE, 32, "MPI_Reduce")                  \
    X(ALLREDUCE, 33, "MPI_Allreduce")            \
    X(GATHER, 34, "MPI_Gather")                  \
    X(GATHERV, 35, "MPI_Gatherv")                \
    X(SCATTER, 36, "MPI_Scatter")                \
    X(SCATTERV, 37, "MPI_Scatterv")              \
    X(ALLGATHER, 38, "MPI_Allgather")            \
    X(ALLGATHERV, 39, "MPI_Allgatherv")          \
    X(ALLTOALL, 40, "MPI_Alltoall")              \
    X(ALLTOALLV, 41, "MPI_Alltoallv")            \
    X(REDUCE_SCATTER, 42, "MPI_Reduce_scatter")  \
    X(SCAN, 43, "MPI_Scan")                      \
    X(EXSCAN, 44, "MPI_Exscan")                  \
    X(COMM_DUP, 50, "MPI_Comm_dup")              \
    X(COMM_SPLIT, 51, "MPI_Comm_split")          \
    X(CART_CREATE, 52, "MPI_Cart_create")        \
    X(COMM_FREE, 53, "MPI_Comm_free")            \
    X(DIMS_CREATE, 54, "MPI_Dims_create")        \
    X(CART_SHIFT, 55, "MPI_Cart_shift")          \
    X(CART_SUB, 56, "MPI_Cart_sub")              \
    X(COMM_CREATE, 57, "MPI_Comm_create")        \
    X(COMM_CREATE_GROUP, 58, "MPI_Comm_create_group") \
    X(GRAPH_CREATE, 59, "MPI_Graph_create")      \
    X(REGION_BEGIN, 60, "region begin")          \
    X(REGION_END, 61, "region end")              \
    X(LOOP_BEGIN, 62, "loop begin")              \
    X(LOOP_ITER, 63, "loop iteration")           \
    X(LOOP_END, 64, "loop end")                  \
    X(DIST_GRAPH_CREATE_ADJACENT, 65, "MPI_Dist_graph_create_adjacent") \
    X(DIST_GRAPH_CREATE, 66, "MPI_Dist_graph_create") \
    X(ARGS, 70, "arguments")

/* On-disk constants of format v4 (README.md, "Format v4"); the reader also reads v3 and v2 (whose records lack
 * the last field, cpu_gap). v4 added the kinds from TESTSOME on and the ARGS records of communicator and
 * topology calls (kinds 54..59, 65, 66 and COMM_DUP, COMM_SPLIT, CART_CREATE). */
#define MKTRACE_MAGIC "MKTRACE1"
#define MKTRACE_FOOTER_MAGIC "MKTREND1"
#define MKTRACE_VERSION 4u
#define MKTRACE_HEADER_BYTES 48u
#define MKTRACE_RECORD_BYTES 64u
#define MKTRACE_RECORD_BYTES_V2 56u
#define MKTRACE_RUN_VERSION 2u /* of run.json, the run directory's description (unchanged by v3) */
#define MKTRACE_MAX_FRAMES 4u
#define MKTRACE_MAX_NAME_BYTES 4096u /* an annotation name (mktrace.h) */
#define MKTRACE_ARGS_PER_RECORD 15u  /* int32 values in one ARGS record: bytes 4..63; its flags say how many are used */
#define MKTRACE_MAX_ARGS 1048576u    /* int32 values after one call (a graph's edges at P = 1,024, ...) */

/* peer / tag / root values that are not ranks or tags */
#define MKTRACE_NONE (-1)
#define MKTRACE_ANY (-2)
#define MKTRACE_PROC_NULL (-3)

/* footer completion status */
#define MKTRACE_STATUS_FINALIZED 1u
#define MKTRACE_STATUS_ABORTED 2u
#define MKTRACE_STATUS_SIGNAL 3u

/* record flags (u16 at offset 2): the wildcards a receive or probe was posted with */
#define MKTRACE_POSTED_ANY_SOURCE 1u
#define MKTRACE_POSTED_ANY_TAG 2u

/* header flags */
#define MKTRACE_FLAG_WTIME_GLOBAL 1u
#define MKTRACE_FLAG_CPU_GAPS 2u /* records carry the thread CPU time of the gap before them (MKTRACE_CPU_TIME=1) */

#endif
