// A stand-in for an old NVIDIA driver's libcuda.so.1, for the refusal tests
// (native/src/operon-cuda-build.test.ts): the CUDA runtime loads it, asks
// cuDriverGetVersion, and answers cudaErrorInsufficientDriver since 12.0 is
// older than the runtime (CUDA 13) operon_cuda was built with. Only the two
// entry points the runtime calls before that decision are here.
extern "C" {

__attribute__((visibility("default"))) int cuDriverGetVersion(int* version) {
  *version = 12000;  // CUDA 12.0's driver API
  return 0;          // CUDA_SUCCESS
}

__attribute__((visibility("default"))) int cuInit(unsigned int flags) {
  (void)flags;
  return 0;
}

}  // extern "C"
