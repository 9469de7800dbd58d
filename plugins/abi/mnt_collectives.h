/* Mantissa plugin ABI: the collectives extension of a backend (since 1.9).
 *
 * Data-parallel training runs one process per device ("rank"); the ranks of
 * a job form a communicator and exchange tensors through collective
 * operations issued on each rank's backend stream. A backend offers them by
 * hanging an MNT_Collectives_Extension (type MNT_EXTENSION_TYPE_COLLECTIVES)
 * on its MNT_Plugin_Api's extension chain; a backend without it runs on one
 * device only.
 *
 * Creating a communicator is a host-side key-value exchange, as NCCL's
 * ncclGetUniqueId / ncclCommInitRank: rank 0 asks its backend for a unique
 * id (opaque bytes), the host broadcasts the bytes to every rank by its own
 * means (the trainer uses MPI), and every rank then creates its
 * communicator from (rank, world size, id). Every rank must make the same
 * collective calls in the same order; a collective returns when it is
 * issued on the stream (like Run), and its result is ready for later work
 * on that stream.
 *
 * Determinism: with the same inputs on every rank and the same world size,
 * every collective gives the same bits on every call and on every rank. A
 * reduction sums in rank order, ((x_0 + x_1) + x_2) + ... in fp32 (an
 * implementation that reduces in another fixed order states it in its
 * description), avg divides the fp32 sum by the world size once, and a
 * 16-bit result is rounded once from the fp32 value.
 *
 * Version 2 adds started collectives (Collectives_Start / Collectives_Wait):
 * a collective that runs concurrently with the ops issued after it until
 * the host joins it, so a trainer can exchange a bucket of gradients while
 * backward computes the next (the overlap data-parallel training relies
 * on). A host reads the version (and the extension's struct_size) before
 * it calls them; a version-1 backend offers Collectives_Run only. */
#ifndef MANTISSA_PLUGINS_ABI_MNT_COLLECTIVES_H_
#define MANTISSA_PLUGINS_ABI_MNT_COLLECTIVES_H_

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MNT_COLLECTIVES_EXTENSION_NAME "collectives"
/* The version this header describes; see MNT_Extension_Header. */
#define MNT_COLLECTIVES_EXTENSION_VERSION 2
/* The most bytes a unique id may take. */
#define MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES 256

typedef struct MNT_Communicator MNT_Communicator; /* opaque */
/* Since version 2: one started collective, until Collectives_Wait. */
typedef struct MNT_CollectiveWork MNT_CollectiveWork; /* opaque */

/* Values are appended only; never renumbered. */
typedef enum MNT_CollectiveOp {
  MNT_COLLECTIVE_INVALID = 0,
  /* output[n] = reduce over ranks of input[n]; output may alias input. */
  MNT_COLLECTIVE_ALL_REDUCE = 1,
  /* input [W*n] on every rank; output [n] on rank r = reduce over ranks of
   * input[r*n .. r*n+n-1]. output must not alias input. */
  MNT_COLLECTIVE_REDUCE_SCATTER = 2,
  /* input [n] on every rank; output [W*n] = the ranks' inputs in rank
   * order. output must not alias input, except that input may be rank r's
   * own chunk output[r*n .. r*n+n-1] (in-place gather). */
  MNT_COLLECTIVE_ALL_GATHER = 3,
  /* output[n] on every rank = input[n] of rank `root`; on the root, output
   * may alias input; other ranks may pass an input with data NULL. */
  MNT_COLLECTIVE_BROADCAST = 4,
} MNT_CollectiveOp;

typedef enum MNT_ReduceOp {
  MNT_REDUCE_OP_INVALID = 0,
  MNT_REDUCE_OP_SUM = 1,
  MNT_REDUCE_OP_AVG = 2, /* the fp32 sum divided by the world size */
  MNT_REDUCE_OP_MAX = 3,
} MNT_ReduceOp;

/* Rank 0 only: an id every rank's Communicator_Create needs. Writes
 * `unique_id_size` (<= MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES) bytes. */
typedef struct MNT_Collectives_GetUniqueId_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  char unique_id[MNT_COLLECTIVES_MAX_UNIQUE_ID_BYTES]; /* out */
  size_t unique_id_size;                               /* out */
} MNT_Collectives_GetUniqueId_Args;
#define MNT_Collectives_GetUniqueId_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Collectives_GetUniqueId_Args, unique_id_size)
typedef MNT_Error* MNT_Collectives_GetUniqueId(MNT_Collectives_GetUniqueId_Args* args);

/* Collective: every rank calls it (with rank 0's id) before any other rank
 * may return. The communicator belongs to `backend` and is used with it
 * only; the caller owns it and destroys it with Communicator_Destroy before
 * the backend. */
typedef struct MNT_Communicator_Create_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  int32_t rank;       /* 0 .. world_size-1 */
  int32_t world_size; /* >= 1 */
  const char* unique_id; /* borrowed for the call */
  size_t unique_id_size;
  MNT_Communicator* communicator; /* out */
} MNT_Communicator_Create_Args;
#define MNT_Communicator_Create_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Communicator_Create_Args, communicator)
typedef MNT_Error* MNT_Communicator_Create(MNT_Communicator_Create_Args* args);

/* Accepts NULL. Waits for the communicator's outstanding work; the works
 * of started collectives not yet waited for are freed with it. */
typedef struct MNT_Communicator_Destroy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Communicator* communicator;
} MNT_Communicator_Destroy_Args;
#define MNT_Communicator_Destroy_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Communicator_Destroy_Args, communicator)
typedef MNT_Error* MNT_Communicator_Destroy(MNT_Communicator_Destroy_Args* args);

/* Issues one collective on the backend's stream. Reductions take F32, F16
 * or BF16 (input and output of one dtype); ALL_GATHER and BROADCAST move
 * any dtype's bytes. Element counts follow the op (n = output's for
 * REDUCE_SCATTER and BROADCAST, input's otherwise); a mismatch, or a dtype
 * or element count that differs between ranks, is an error (a rank may
 * only find the latter out from a failing transport). The tensors are
 * borrowed for the call; their memory must stay valid until the work
 * completes (Synchronize). */
typedef struct MNT_Collectives_Run_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Communicator* communicator;
  MNT_CollectiveOp op;
  MNT_ReduceOp reduce; /* reductions only */
  int32_t root;        /* BROADCAST only */
  const MNT_Tensor* input;
  const MNT_Tensor* output;
} MNT_Collectives_Run_Args;
#define MNT_Collectives_Run_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Collectives_Run_Args, output)
typedef MNT_Error* MNT_Collectives_Run(MNT_Collectives_Run_Args* args);

/* Since version 2. Starts one collective: the same operands, checks and
 * results as Collectives_Run, but the collective runs off the backend's
 * stream. It reads its input after every op issued on the stream before
 * this call, and runs concurrently with the ops issued after it until
 * Collectives_Wait joins it. Until then no op may write its input or read
 * or write its output, and their memory stays valid (the caller's
 * promise; a backend need not check it). Collectives of one communicator,
 * started or run, execute in the order they were issued, so every rank
 * still makes the same calls in the same order.
 *
 * Start does not wait for the other ranks to start theirs (that is its
 * point: a rank may compute while a slower rank catches up). An error in
 * the arguments is returned here and `work` is NULL; an error while the
 * collective runs (a transport failure, a rank gone) is returned by
 * Collectives_Wait. On success `work` belongs to the caller, who passes it
 * to Collectives_Wait exactly once (or destroys the communicator). */
typedef struct MNT_Collectives_Start_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Communicator* communicator;
  MNT_CollectiveOp op;
  MNT_ReduceOp reduce; /* reductions only */
  int32_t root;        /* BROADCAST only */
  /* The structs are borrowed for the call; the memory they describe
   * (data) until Collectives_Wait returns. */
  const MNT_Tensor* input;
  const MNT_Tensor* output;
  MNT_CollectiveWork* work; /* out */
} MNT_Collectives_Start_Args;
#define MNT_Collectives_Start_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Collectives_Start_Args, work)
typedef MNT_Error* MNT_Collectives_Start(MNT_Collectives_Start_Args* args);

/* Since version 2. Joins a started collective: ops issued on the backend's
 * stream after this call see its result. Like every op it is ordered on the
 * stream: a backend whose stream runs asynchronously (CUDA) makes the
 * stream wait and returns without blocking the host; the CPU backend
 * returns when the collective has finished. Works may be waited for in any
 * order. `work` is consumed, whatever the result: the collective's own
 * error (if it failed) is returned here, with the communicator unusable
 * afterwards except for Communicator_Destroy. */
typedef struct MNT_Collectives_Wait_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Communicator* communicator;
  MNT_CollectiveWork* work;
} MNT_Collectives_Wait_Args;
#define MNT_Collectives_Wait_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Collectives_Wait_Args, work)
typedef MNT_Error* MNT_Collectives_Wait(MNT_Collectives_Wait_Args* args);

/* Hung on MNT_Plugin_Api's chain with header.base.type
 * MNT_EXTENSION_TYPE_COLLECTIVES, header.name
 * MNT_COLLECTIVES_EXTENSION_NAME. Version 1: the first four calls, each
 * non-NULL (header.base.struct_size
 * MNT_Collectives_Extension_V1_STRUCT_SIZE). Version 2 appends
 * Collectives_Start and Collectives_Wait, both non-NULL. */
typedef struct MNT_Collectives_Extension {
  MNT_Extension_Header header;
  MNT_Collectives_GetUniqueId* Collectives_GetUniqueId;
  MNT_Communicator_Create* Communicator_Create;
  MNT_Communicator_Destroy* Communicator_Destroy;
  MNT_Collectives_Run* Collectives_Run;
  /* Since version 2. */
  MNT_Collectives_Start* Collectives_Start;
  MNT_Collectives_Wait* Collectives_Wait;
} MNT_Collectives_Extension;
#define MNT_Collectives_Extension_V1_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Collectives_Extension, Collectives_Run)
#define MNT_Collectives_Extension_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Collectives_Extension, Collectives_Wait)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MANTISSA_PLUGINS_ABI_MNT_COLLECTIVES_H_ */
