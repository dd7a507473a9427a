// Device code for gpucts_nccl_prune: a shared library built for sm_80 and sm_90 (plus compute_90
// PTX) with zstd-compressed fatbin entries, as NCCL's wheels ship theirs.
__global__ void gpucts_prune_fixture_scale(float* x, float a) { x[threadIdx.x] *= a; }
__global__ void gpucts_prune_fixture_add(int* x, int a) { x[threadIdx.x] += a; }
extern "C" void gpucts_prune_fixture_launch(float* x) { gpucts_prune_fixture_scale<<<1, 32>>>(x, 2.f); }
