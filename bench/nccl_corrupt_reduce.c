// LD_PRELOAD layer over libnccl for the GPU machine: after every ncclReduce of the chosen dtype, the
// root's last output element is overwritten on the call's stream. It stands for a broken ncclReduce
// in a held-out library, to prove that a suite calling ncclReduce (directly or through torch) sees it.
//   GPUCTS_CORRUPT_REDUCE_DTYPE: the ncclDataType_t number to corrupt (default ncclFloat64)
//   GPUCTS_CORRUPT_REDUCE_LOG=1: one stderr line per corrupted call
// Calls inside ncclGroupStart/End are corrupted after the outermost ncclGroupEnd, where NCCL has
// enqueued the collective. The driver API is reached through dlopen: no link to a CUDA runtime.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*memcpy_htod_async_fn)(uint64_t dst, const void* src, size_t bytes, void* stream);

static const double kWrong = -12345.5;  // exact in f64, never a payload value
static int g_group_depth;
static struct {
  void* buf;
  size_t count;
  cudaStream_t stream;
} g_pending[256];
static int g_npending;

static void* next_symbol(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (!f) {
    fprintf(stderr, "nccl_corrupt_reduce: %s not found after this layer\n", name);
    abort();
  }
  return f;
}

static int target_dtype(void) {
  const char* v = getenv("GPUCTS_CORRUPT_REDUCE_DTYPE");
  return v && *v ? atoi(v) : (int)ncclFloat64;
}

static void corrupt_last(void* buf, size_t count, cudaStream_t stream) {
  static memcpy_htod_async_fn copy;
  if (!copy) {
    void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) cuda = dlopen("libcuda.so.1", RTLD_NOW);
    copy = cuda ? (memcpy_htod_async_fn)dlsym(cuda, "cuMemcpyHtoDAsync_v2") : NULL;
    if (!copy) {
      fprintf(stderr, "nccl_corrupt_reduce: cuMemcpyHtoDAsync_v2 not found in libcuda.so.1\n");
      abort();
    }
  }
  if (count == 0) return;
  const uint64_t last = (uint64_t)(uintptr_t)buf + (count - 1) * sizeof(double);
  int rc = copy(last, &kWrong, sizeof kWrong, (void*)stream);
  if (getenv("GPUCTS_CORRUPT_REDUCE_LOG"))
    fprintf(stderr, "nccl_corrupt_reduce: element %zu of %p set to %g (cuMemcpyHtoDAsync %d)\n", count - 1, buf,
            kWrong, rc);
}

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                        int root, ncclComm_t comm, cudaStream_t stream) {
  typedef ncclResult_t (*reduce_fn)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t,
                                    cudaStream_t);
  typedef ncclResult_t (*rank_fn)(const ncclComm_t, int*);
  static reduce_fn real;
  static rank_fn user_rank;
  if (!real) {
    real = (reduce_fn)next_symbol("ncclReduce");
    user_rank = (rank_fn)next_symbol("ncclCommUserRank");
  }
  ncclResult_t rc = real(sendbuff, recvbuff, count, datatype, op, root, comm, stream);
  int rank = -1;
  if (rc != ncclSuccess || (int)datatype != target_dtype() || user_rank(comm, &rank) != ncclSuccess || rank != root)
    return rc;
  if (g_group_depth > 0 && g_npending < (int)(sizeof g_pending / sizeof g_pending[0])) {
    g_pending[g_npending].buf = recvbuff;
    g_pending[g_npending].count = count;
    g_pending[g_npending].stream = stream;
    ++g_npending;
  } else if (g_group_depth == 0) {
    corrupt_last(recvbuff, count, stream);
  }
  return rc;
}

ncclResult_t ncclGroupStart(void) {
  static ncclResult_t (*real)(void);
  if (!real) real = (ncclResult_t(*)(void))next_symbol("ncclGroupStart");
  ncclResult_t rc = real();
  if (rc == ncclSuccess) ++g_group_depth;
  return rc;
}

ncclResult_t ncclGroupEnd(void) {
  static ncclResult_t (*real)(void);
  if (!real) real = (ncclResult_t(*)(void))next_symbol("ncclGroupEnd");
  ncclResult_t rc = real();
  if (g_group_depth > 0 && --g_group_depth == 0) {
    for (int i = 0; i < g_npending && rc == ncclSuccess; ++i)
      corrupt_last(g_pending[i].buf, g_pending[i].count, g_pending[i].stream);
    g_npending = 0;
  }
  return rc;
}
