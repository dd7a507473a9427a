// The one definition of the device check (cub::DeviceReduce::TransformReduce over the indices);
// included only by verify_lo.cu and verify_hi.cu, which instantiate it for their half of kDTypes.
#pragma once
#include <cub/device/device_for.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>

#include "payload_impl.cuh"

namespace cts::detail {

template <DType D>
struct Describe {
  Elem<D> e;
  std::int64_t i;
  double* out;  // [expected, got]
  __device__ void operator()(int) const {
    double bound = 0;
    out[0] = e.expected_at(i, &bound);
    out[1] = e.got_at(i);
  }
};

template <DType D>
VerifyResult run_check(const CheckSpec& spec, std::size_t count, cudaStream_t stream, double timeout_s) {
  VerifyResult r;
  if (count == 0) return r;
  Elem<D> elem{spec};
  thrust::counting_iterator<std::int64_t> first(0);
  const Acc init{0ULL, kNone, 0.0, -1};
  std::size_t tmp_bytes = 0;
  cuda_check(cub::DeviceReduce::TransformReduce(nullptr, tmp_bytes, first, static_cast<Acc*>(nullptr),
                                                static_cast<std::int64_t>(count), AccJoin{}, elem, init, stream),
             "cub::DeviceReduce::TransformReduce (size)");
  retain_async_pool();
  const std::size_t head = 256;  // Acc and the two described values, then CUB's temp storage
  char* mem = nullptr;
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&mem), head + tmp_bytes, stream), "cudaMallocAsync (verify)");
  Acc* d_acc = reinterpret_cast<Acc*>(mem);
  double* d_vals = reinterpret_cast<double*>(mem + 128);
  struct Host { Acc acc; double vals[2]; };
  static thread_local Host* host = nullptr;
  if (!host) cuda_check(cudaMallocHost(reinterpret_cast<void**>(&host), sizeof(Host)), "cudaMallocHost (verify)");
  cudaError_t err = cub::DeviceReduce::TransformReduce(mem + head, tmp_bytes, first, d_acc,
                                                       static_cast<std::int64_t>(count), AccJoin{}, elem, init, stream);
  if (err == cudaSuccess) err = cudaMemcpyAsync(&host->acc, d_acc, sizeof(Acc), cudaMemcpyDeviceToHost, stream);
  if (err != cudaSuccess) {
    cudaFreeAsync(mem, stream);
    cuda_check(err, "verify");
  }
  wait_stream(stream, timeout_s, "verify");
  r.mismatches = host->acc.bad;
  r.worst_ratio = host->acc.worst;
  r.worst_index = host->acc.worst_idx;
  if (host->acc.bad > 0) {
    r.first_bad = host->acc.first;
    err = cub::DeviceFor::Bulk(1, Describe<D>{elem, host->acc.first, d_vals}, stream);
    if (err == cudaSuccess) err = cudaMemcpyAsync(host->vals, d_vals, sizeof(host->vals), cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess) {
      wait_stream(stream, timeout_s, "verify (describe)");
      r.expected = host->vals[0];
      r.got = host->vals[1];
    }
  }
  cudaFreeAsync(mem, stream);
  cuda_check(err, "verify (describe)");
  return r;
}

}  // namespace cts::detail
