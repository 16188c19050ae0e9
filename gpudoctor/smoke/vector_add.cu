// gpudoctor nvcc smoke test: vector add on the first visible device, checked element by element.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void vadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("GPUDOCTOR_SMOKE_FAIL %s: %s (%s)\n", #x, cudaGetErrorString(e), cudaGetErrorName(e)); return 1; } } while (0)

int main() {
    const int n = 1 << 16;
    static float a[1 << 16], b[1 << 16], c[1 << 16];
    for (int i = 0; i < n; ++i) { a[i] = (float)i; b[i] = 0.5f * i; c[i] = -1.0f; }
    float *da, *db, *dc;
    CHECK(cudaMalloc(&da, n * sizeof(float)));
    CHECK(cudaMalloc(&db, n * sizeof(float)));
    CHECK(cudaMalloc(&dc, n * sizeof(float)));
    CHECK(cudaMemcpy(da, a, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dc, 0xff, n * sizeof(float)));
    vadd<<<(n + 255) / 256, 256>>>(da, db, dc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) if (c[i] != a[i] + b[i]) ++bad;
    if (bad) { printf("GPUDOCTOR_SMOKE_FAIL %d of %d elements wrong\n", bad, n); return 1; }
    printf("GPUDOCTOR_SMOKE_OK %d\n", n);
    return 0;
}
