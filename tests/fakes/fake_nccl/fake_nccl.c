/* FAKE libnccl.so.2 for tests: the C ABI of the NCCL calls gpudoctor's multi-GPU smoke test makes
 * (nccl.h: ncclGetVersion, ncclGetErrorString, ncclCommInitAll, ncclGroupStart/End, ncclAllReduce,
 * ncclCommDestroy), computing a real float32 sum over host buffers (the fake CUDA runtime's "device"
 * memory is host memory). It refuses any data type but ncclFloat32 (7) and any op but ncclSum (0), so
 * wrong ctypes arguments fail the test. FAKE_NCCL_FAIL=1: ncclCommInitAll returns ncclSystemError (2).
 * FAKE_NCCL_WARN=1: writes a WARN line to $NCCL_DEBUG_FILE as NCCL does. */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>

typedef struct { int rank; int n; } fake_comm;
static const void *sends[64];
static void *recvs[64];
static size_t counts[64];
static int queued = 0;

int ncclGetVersion(int *version) { *version = 22809; return 0; }

const char *ncclGetErrorString(int result) {
    return result == 2 ? "unhandled system error (FAKE)" : result == 4 ? "invalid argument (FAKE)" : "FAKE";
}

int ncclCommInitAll(void **comms, int ndev, const int *devlist) {
    if (getenv("FAKE_NCCL_FAIL")) return 2;
    if (getenv("FAKE_NCCL_WARN") && getenv("NCCL_DEBUG_FILE")) {
        FILE *f = fopen(getenv("NCCL_DEBUG_FILE"), "a");
        if (f) { fprintf(f, "fakehost:1:1 [0] NCCL INFO fake\nfakehost:1:1 [0] NCCL WARN P2P is disabled between GPU 0 and GPU 1 (FAKE)\n"); fclose(f); }
    }
    for (int i = 0; i < ndev; i++) {
        fake_comm *c = malloc(sizeof *c);
        c->rank = i;
        c->n = ndev;
        comms[i] = c;
    }
    (void)devlist;
    return 0;
}

int ncclGroupStart(void) { queued = 0; return 0; }

int ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream) {
    fake_comm *c = comm;
    (void)stream;
    if (datatype != 7 || op != 0 || c == NULL || c->rank >= 64) return 4;
    sends[c->rank] = send;
    recvs[c->rank] = recv;
    counts[c->rank] = count;
    queued++;
    return 0;
}

int ncclGroupEnd(void) {
    for (int i = 1; i < queued; i++) if (counts[i] != counts[0]) return 4;
    for (size_t k = 0; k < (queued ? counts[0] : 0); k++) {
        float sum = 0.0f;
        for (int i = 0; i < queued; i++) sum += ((const float *)sends[i])[k];
        for (int i = 0; i < queued; i++) ((float *)recvs[i])[k] = sum;
    }
    return 0;
}

int ncclCommDestroy(void *comm) { free(comm); return 0; }
