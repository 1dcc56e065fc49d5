/* tests/fakedriver/fake.h — constants shared by the fake driver's pieces. */
#ifndef FAKE_DRIVER_H
#define FAKE_DRIVER_H

/* What the fake libcuda's cuDriverGetVersion() and the fake NVML's
 * nvmlSystemGetCudaDriverVersion() report: CUDA 12.4. */
#define FAKE_CUDA_VERSION 12040

#endif
