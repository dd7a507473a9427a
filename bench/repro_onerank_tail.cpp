// Standalone reproducer, independent of the gpucts kernels and harness: one-rank ncclAllReduce
// with avg / PreMulSum, out of place. The suite saw NCCL 2.28.3 leave the last element(s) of the
// output unwritten for counts just above a power of two; this program shows it with nothing but
// cudaMemcpy, cudaMemset and one NCCL call, so it can go into a bug report as it is.
//   repro_onerank_tail [device]      exit 0: every element written; 1: some were not
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK_CUDA(x)                                               \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      return 2;                                                     \
    }                                                               \
  } while (0)
#define CHECK_NCCL(x)                                               \
  do {                                                              \
    ncclResult_t r_ = (x);                                          \
    if (r_ != ncclSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, ncclGetErrorString(r_)); \
      return 2;                                                     \
    }                                                               \
  } while (0)

namespace {

struct Case {
  const char* dtype;
  ncclDataType_t type;
  size_t elem;
  bool avg;  // avg (floats) or PreMulSum with scalar 1 (integers and floats)
};

// Host value 1 in each type, bit for bit.
void one(const Case& c, unsigned char* out) {
  if (c.type == ncclFloat32) {
    float v = 1.f;
    std::memcpy(out, &v, 4);
  } else if (c.type == ncclFloat64) {
    double v = 1.0;
    std::memcpy(out, &v, 8);
  } else if (c.type == ncclInt32) {
    int v = 1;
    std::memcpy(out, &v, 4);
  } else if (c.type == ncclUint8) {
    out[0] = 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int dev = argc > 1 ? std::atoi(argv[1]) : 0;
  int version = 0;
  CHECK_NCCL(ncclGetVersion(&version));
  CHECK_CUDA(cudaSetDevice(dev));
  ncclComm_t comm;
  CHECK_NCCL(ncclCommInitAll(&comm, 1, &dev));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  std::printf("NCCL runtime %d, header %d, one rank on device %d\n", version, NCCL_VERSION_CODE, dev);

  const Case cases[] = {{"f32", ncclFloat32, 4, true},
                        {"f64", ncclFloat64, 8, true},
                        {"i32", ncclInt32, 4, false},
                        {"u8", ncclUint8, 1, false}};
  const size_t counts[] = {8191, 8192, 8193, 65537, 262143, 262144, 262145, 1048577, 4194305};
  int bad_cases = 0;
  for (const Case& c : cases) {
    for (size_t count : counts) {
      size_t bytes = count * c.elem;
      void *send = nullptr, *recv = nullptr;
      CHECK_CUDA(cudaMalloc(&send, bytes));
      CHECK_CUDA(cudaMalloc(&recv, bytes));
      std::vector<unsigned char> host(bytes);
      for (size_t i = 0; i < count; ++i) one(c, &host[i * c.elem]);
      CHECK_CUDA(cudaMemcpy(send, host.data(), bytes, cudaMemcpyHostToDevice));
      CHECK_CUDA(cudaMemset(recv, 0xff, bytes));  // poison: NaN / -1 / 255
      ncclRedOp_t op = ncclAvg;
      if (!c.avg) {
        int scalar = 1;
        unsigned char s8 = 1;
        CHECK_NCCL(ncclRedOpCreatePreMulSum(&op, c.type == ncclUint8 ? static_cast<void*>(&s8) : &scalar,
                                            c.type, ncclScalarHostImmediate, comm));
      }
      CHECK_NCCL(ncclAllReduce(send, recv, count, c.type, op, comm, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      if (!c.avg) CHECK_NCCL(ncclRedOpDestroy(op, comm));
      CHECK_CUDA(cudaMemcpy(host.data(), recv, bytes, cudaMemcpyDeviceToHost));
      size_t first_bad = count, wrong = 0;
      std::vector<unsigned char> expect(c.elem);
      one(c, expect.data());
      for (size_t i = 0; i < count; ++i)
        if (std::memcmp(&host[i * c.elem], expect.data(), c.elem) != 0) {
          if (first_bad == count) first_bad = i;
          ++wrong;
        }
      std::printf("%-4s %-9s count %8zu: %s", c.dtype, c.avg ? "avg" : "premulsum", count,
                  wrong ? "WRONG" : "ok");
      if (wrong) std::printf(" (%zu element(s) not written, first at %zu)", wrong, first_bad);
      std::printf("\n");
      bad_cases += wrong ? 1 : 0;
      CHECK_CUDA(cudaFree(send));
      CHECK_CUDA(cudaFree(recv));
    }
  }
  ncclCommDestroy(comm);
  std::printf("%d case(s) with unwritten output elements\n", bad_cases);
  return bad_cases ? 1 : 0;
}
