/*
 * An ACL host program written against the documented ACL runtime API alone: its own
 * declarations below (from the prototypes in Huawei's ACL documentation), no other header.
 * It checks what the documentation promises, error returns included. argv[1]: a kernel binary
 * with the kernels `accumulate(x, y, n)`, `accumulate_indirect(args)` and `fault_kernel(p)`.
 * Prints one line per failed check and exits 1 if any failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtEvent;
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;
typedef void *aclrtArgsHandle;
typedef void *aclrtParamHandle;

typedef struct { uint32_t addrOffset; uint32_t dataOffset; } aclrtPlaceHolderInfo;
typedef union { uint8_t schemMode; uint32_t rsv[4]; } aclrtLaunchKernelAttrValue;
typedef struct { int id; aclrtLaunchKernelAttrValue value; } aclrtLaunchKernelAttr;
typedef struct { aclrtLaunchKernelAttr *attrs; size_t numAttrs; } aclrtLaunchKernelCfg;
typedef enum {
    ACL_PKG_NAME_CANN,
    ACL_PKG_NAME_RUNTIME,
    ACL_PKG_NAME_COMPILER,
    ACL_PKG_NAME_HCCL,
    ACL_PKG_NAME_TOOLKIT,
    ACL_PKG_NAME_OPP,
    ACL_PKG_NAME_OPP_KERNEL,
    ACL_PKG_NAME_DRIVER
} aclCANNPackageName;
/* Every part a NUL-terminated string: 128 bytes for the whole version and the reserved tail,
 * 64 for each of the four parts. */
typedef struct {
    char version[128];
    char majorVersion[64];
    char minorVersion[64];
    char releaseVersion[64];
    char patchVersion[64];
    char reserved[128];
} aclCANNPackageVersion;

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
const char *aclGetRecentErrMsg(void);
aclError aclrtGetDeviceCount(uint32_t *count);
aclError aclsysGetVersionStr(char *pkgName, char *versionStr);
aclError aclsysGetCANNVersion(aclCANNPackageName name, aclCANNPackageVersion *version);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtGetDevice(int32_t *deviceId);
aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId);
aclError aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
aclError aclrtCreateEvent(aclrtEvent *event);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
aclError aclrtSynchronizeEvent(aclrtEvent event);
aclError aclrtQueryEventStatus(aclrtEvent event, int32_t *status);
aclError aclrtMallocHost(void **hostPtr, size_t size);
aclError aclrtFreeHost(void *hostPtr);
aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream);
aclError aclrtBinaryLoadFromData(const void *data, size_t length, const void *options, aclrtBinHandle *binHandle);
aclError aclrtKernelArgsAppend(aclrtArgsHandle argsHandle, void *param, size_t paramSize, aclrtParamHandle *paramHandle);
aclError aclrtMalloc(void **devPtr, size_t size, int policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind);
aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, int kind,
                          aclrtStream stream);
aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);
aclError aclrtBinaryLoadFromFile(const char *binPath, void *options, aclrtBinHandle *binHandle);
aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                aclrtFuncHandle *funcHandle);
aclError aclrtBinaryUnLoad(aclrtBinHandle binHandle);
aclError aclrtKernelArgsInit(aclrtFuncHandle funcHandle, aclrtArgsHandle *argsHandle);
aclError aclrtKernelArgsAppendPlaceHolder(aclrtArgsHandle argsHandle, aclrtParamHandle *paramHandle);
aclError aclrtKernelArgsGetPlaceHolderBuffer(aclrtArgsHandle argsHandle, aclrtParamHandle paramHandle,
                                             size_t dataSize, void **bufferAddr);
aclError aclrtKernelArgsFinalize(aclrtArgsHandle argsHandle);
aclError aclrtLaunchKernelWithConfig(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                     aclrtLaunchKernelCfg *cfg, aclrtArgsHandle argsHandle, void *reserve);
aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum);
aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags);
aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);
aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);
aclError aclrtIpcMemClose(const char *key);
aclError aclrtDeviceGetBareTgid(int32_t *pid);

enum { H2D = 1, D2H = 2, D2D = 3 };
enum {
    OK = 0,
    INVALID_PARAM = 100000,
    UNINITIALIZE = 100001,
    REPEAT_INITIALIZE = 100002,
    INVALID_FILE = 100003,
    RT_PARAM_INVALID = 107000,
    RT_INVALID_DEVICEID = 107001,
    RT_CONTEXT_NULL = 107002,
    RT_INVALID_HANDLE = 107017,
    RT_KERNEL_LOOKUP = 507027,
    RT_VECTOR_CORE_EXCEPTION = 507035,
};

static int failures = 0;

#define EXPECT(call, want)                                                                     \
    do {                                                                                       \
        aclError got_ = (call);                                                                \
        if (got_ != (want)) {                                                                  \
            const char *m_ = aclGetRecentErrMsg();                                             \
            printf("line %d: %s returned %d, expected %d (%s)\n", __LINE__, #call, got_, (want), \
                   m_ ? m_ : "no message");                                                    \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("line %d: %s is false\n", __LINE__, #cond);                                 \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#define N 1024

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: %s KERNEL_BINARY\n", argv[0]);
        return 2;
    }
    uint32_t count = 0;
    /* A runtime call before aclInit initialises the runtime with the defaults (the public
     * AscendC samples call aclrtSetDevice without aclInit); aclInit after it still succeeds,
     * once. */
    EXPECT(aclrtGetDeviceCount(&count), OK);
    EXPECT(aclInit(NULL), OK);
    EXPECT(aclInit(NULL), REPEAT_INITIALIZE);
    EXPECT(aclrtGetDeviceCount(&count), OK);
    CHECK(count >= 2);
    EXPECT(aclrtGetDeviceCount(NULL), INVALID_PARAM);

    /* The runtime package's version, as a string (8.5+) and in parts (deprecated). acl-twin
     * reports its own, "acl-twin <crate version>"; the Rust side checks the line printed. */
    char runtime_pkg[] = "runtime", driver_pkg[] = "driver";
    char ver[128]; /* ACL_PKG_VERSION_MAX_SIZE */
    memset(ver, 0, sizeof ver);
    EXPECT(aclsysGetVersionStr(runtime_pkg, ver), OK);
    CHECK(strncmp(ver, "acl-twin ", 9) == 0);
    printf("runtime version: %s\n", ver);
    EXPECT(aclsysGetVersionStr(NULL, ver), INVALID_PARAM);
    const char *vmsg = aclGetRecentErrMsg();
    CHECK(vmsg != NULL && strstr(vmsg, "pkgName") != NULL);
    EXPECT(aclsysGetVersionStr(runtime_pkg, NULL), INVALID_PARAM);
    EXPECT(aclsysGetVersionStr(driver_pkg, ver), INVALID_FILE); /* not installed */
    aclCANNPackageVersion pv;
    memset(&pv, 0x55, sizeof pv);
    EXPECT(aclsysGetCANNVersion(ACL_PKG_NAME_RUNTIME, &pv), OK);
    CHECK(strcmp(pv.version, ver) == 0);
    CHECK(strcmp(pv.releaseVersion, "0") == 0); /* none: "0", as documented */
    CHECK(pv.reserved[0] == 0);
    printf("runtime version parts: %s.%s.%s\n", pv.majorVersion, pv.minorVersion, pv.patchVersion);
    memset(&pv, 0, sizeof pv);
    EXPECT(aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &pv), OK);
    CHECK(strcmp(pv.version, ver) == 0);
    EXPECT(aclsysGetCANNVersion(ACL_PKG_NAME_RUNTIME, NULL), INVALID_PARAM);
    vmsg = aclGetRecentErrMsg();
    CHECK(vmsg != NULL && strstr(vmsg, "version") != NULL);
    EXPECT(aclsysGetCANNVersion(ACL_PKG_NAME_DRIVER, &pv), INVALID_FILE); /* not installed */
    EXPECT(aclsysGetCANNVersion((aclCANNPackageName)99, &pv), INVALID_PARAM);

    /* Memory needs a device on the thread. */
    void *d = NULL;
    EXPECT(aclrtMalloc(&d, 64, 0), RT_CONTEXT_NULL);
    EXPECT(aclrtSetDevice((int32_t)count), RT_INVALID_DEVICEID);
    EXPECT(aclrtSetDevice(-1), RT_INVALID_DEVICEID);
    EXPECT(aclrtSetDevice(0), OK);
    int32_t dev = -1;
    EXPECT(aclrtGetDevice(&dev), OK);
    CHECK(dev == 0);
    int32_t can = -1;
    EXPECT(aclrtDeviceCanAccessPeer(&can, 0, 1), OK);
    CHECK(can == 1);
    EXPECT(aclrtDeviceCanAccessPeer(&can, 0, (int32_t)count), RT_INVALID_DEVICEID);
    EXPECT(aclrtDeviceEnablePeerAccess(1, 0), OK);
    EXPECT(aclrtDeviceEnablePeerAccess(0, 0), INVALID_PARAM); /* not its own peer */
    EXPECT(aclrtDeviceEnablePeerAccess(1, 1), INVALID_PARAM); /* flags must be 0 */

    /* Copies and their checks. */
    float x[N], y[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 0.5f;
    }
    void *dx = NULL, *dy = NULL;
    EXPECT(aclrtMalloc(&dx, sizeof x, 0), OK);
    EXPECT(aclrtMalloc(&dy, sizeof y, 0), OK);
    EXPECT(aclrtMalloc(&d, 0, 0), INVALID_PARAM);
    EXPECT(aclrtMemcpy(dx, sizeof x, x, sizeof x, H2D), OK);
    EXPECT(aclrtMemcpy(dy, sizeof y, y, sizeof y, H2D), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dx, sizeof out, D2H), OK);
    CHECK(memcmp(out, x, sizeof x) == 0);
    EXPECT(aclrtMemcpy(dx, 16, x, 32, H2D), RT_PARAM_INVALID);
    const char *msg = aclGetRecentErrMsg();
    CHECK(msg != NULL && strstr(msg, "destMax") != NULL);
    CHECK(aclGetRecentErrMsg() == NULL); /* read once */
    EXPECT(aclrtMemcpy(dx, sizeof x + 4, x, sizeof x + 4, H2D), INVALID_PARAM); /* past the end */
    EXPECT(aclrtMemcpy(NULL, 4, x, 4, H2D), INVALID_PARAM);
    EXPECT(aclrtMemcpy(x, sizeof x, x + 1, 4, H2D), INVALID_PARAM); /* host is not device */
    EXPECT(aclrtMemset(dx, 8, 0, 16), RT_PARAM_INVALID);
    void *tmp = NULL;
    EXPECT(aclrtMalloc(&tmp, 64, 0), OK);
    EXPECT(aclrtFree(tmp), OK);
    EXPECT(aclrtFree(tmp), INVALID_PARAM);
    EXPECT(aclrtMemcpy(tmp, 64, x, 64, H2D), INVALID_PARAM); /* freed */
    EXPECT(aclrtFree((char *)dx + 4), INVALID_PARAM);

    /* Streams and events: s2 copies dx to dz only after s1's memset of dz. */
    aclrtStream s1 = NULL, s2 = NULL;
    aclrtEvent ev = NULL;
    EXPECT(aclrtCreateStream(&s1), OK);
    EXPECT(aclrtCreateStream(&s2), OK);
    EXPECT(aclrtCreateEvent(&ev), OK);
    void *dz = NULL;
    EXPECT(aclrtMalloc(&dz, sizeof x, 0), OK);
    EXPECT(aclrtMemcpyAsync(dz, sizeof x, y, sizeof y, H2D, s1), OK);
    EXPECT(aclrtRecordEvent(ev, s1), OK);
    EXPECT(aclrtStreamWaitEvent(s2, ev), OK);
    EXPECT(aclrtMemcpyAsync(dz, sizeof x, dx, sizeof x, D2D, s2), OK);
    EXPECT(aclrtSynchronizeStream(s2), OK);
    EXPECT(aclrtSynchronizeEvent(ev), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dz, sizeof out, D2H), OK);
    CHECK(memcmp(out, x, sizeof x) == 0);
    EXPECT(aclrtSynchronizeStreamWithTimeout(s1, 1000), OK);
    EXPECT(aclrtSynchronizeStreamWithTimeout(s1, -2), INVALID_PARAM);
    EXPECT(aclrtRecordEvent((aclrtEvent)0x12345, s1), RT_INVALID_HANDLE);
    EXPECT(aclrtSynchronizeStream((aclrtStream)0x12345), RT_INVALID_HANDLE);

    /* Binaries. */
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle acc = NULL, ind = NULL, trap = NULL, f = NULL;
    EXPECT(aclrtBinaryLoadFromFile("/nonexistent/kernels.so", NULL, &bin), 100003);
    EXPECT(aclrtBinaryLoadFromFile(argv[1], NULL, &bin), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "accumulate", &acc), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "accumulate_indirect", &ind), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "fault_kernel", &trap), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "no_such_kernel", &f), RT_KERNEL_LOOKUP);
    EXPECT(aclrtBinaryGetFunction(bin, NULL, &f), INVALID_PARAM);

    /* Host arguments, batch scheduling: y += x on 4 blocks. */
    aclrtLaunchKernelAttr attr;
    memset(&attr, 0, sizeof attr);
    attr.id = 1; /* ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE */
    attr.value.schemMode = 1;
    aclrtLaunchKernelCfg cfg = {&attr, 1};
    struct {
        void *x;
        void *y;
        uint32_t n;
    } direct = {dx, dy, N};
    size_t direct_size = 8 + 8 + 4;
    EXPECT(aclrtLaunchKernelWithHostArgs(acc, 4, s1, &cfg, &direct, direct_size, NULL, 0), OK);
    EXPECT(aclrtSynchronizeStream(s1), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dy, sizeof out, D2H), OK);
    int right = 1;
    for (int i = 0; i < N; i++) {
        right &= out[i] == x[i] + 0.5f;
    }
    CHECK(right);
    /* An event orders a kernel on s1 before a copy on s2: dz = y, dz += x on s1, then s2 copies
     * dz to dw. Without the wait s2's copy, on an idle stream, would read dz before the kernel
     * ran (a kernel takes milliseconds on the twin). */
    void *dw = NULL;
    EXPECT(aclrtMalloc(&dw, sizeof x, 0), OK);
    EXPECT(aclrtMemcpy(dz, sizeof y, y, sizeof y, H2D), OK);
    struct {
        void *x;
        void *y;
        uint32_t n;
    } into_dz = {dx, dz, N};
    EXPECT(aclrtLaunchKernelWithHostArgs(acc, 4, s1, &cfg, &into_dz, direct_size, NULL, 0), OK);
    EXPECT(aclrtRecordEvent(ev, s1), OK);
    EXPECT(aclrtStreamWaitEvent(s2, ev), OK);
    EXPECT(aclrtMemcpyAsync(dw, sizeof x, dz, sizeof x, D2D, s2), OK);
    EXPECT(aclrtSynchronizeStream(s2), OK);
    int32_t status = -1;
    EXPECT(aclrtQueryEventStatus(ev, &status), OK);
    CHECK(status == 1); /* ACL_EVENT_RECORDED_STATUS_COMPLETE */
    EXPECT(aclrtMemcpy(out, sizeof out, dw, sizeof out, D2H), OK);
    right = 1;
    for (int i = 0; i < N; i++) {
        right &= out[i] == x[i] + 0.5f;
    }
    CHECK(right);
    EXPECT(aclrtMemsetAsync(dw, sizeof x, 0, sizeof x, s2), OK);
    EXPECT(aclrtSynchronizeStream(s2), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dw, sizeof out, D2H), OK);
    CHECK(out[0] == 0.0f && out[N - 1] == 0.0f);
    EXPECT(aclrtFree(dw), OK);

    /* Arguments of the wrong size, zero blocks, a bad handle: refused. */
    EXPECT(aclrtLaunchKernelWithHostArgs(acc, 4, s1, &cfg, &direct, 16, NULL, 0), INVALID_PARAM);
    EXPECT(aclrtLaunchKernelWithHostArgs(acc, 0, s1, &cfg, &direct, direct_size, NULL, 0), INVALID_PARAM);
    EXPECT(aclrtLaunchKernelWithHostArgs((aclrtFuncHandle)0x12345, 4, s1, &cfg, &direct, direct_size, NULL, 0),
           RT_INVALID_HANDLE);

    /* A placeholder: the struct goes to the device, its address into the first slot. */
    struct {
        uint64_t slot;
        uint64_t x;
        uint64_t y;
        uint32_t n;
        uint32_t pad;
    } host = {0, (uint64_t)(uintptr_t)dx, (uint64_t)(uintptr_t)dy, N, 0};
    aclrtPlaceHolderInfo ph = {0, 8};
    EXPECT(aclrtLaunchKernelWithHostArgs(ind, 2, s1, &cfg, &host, sizeof host, &ph, 1), OK);
    EXPECT(aclrtSynchronizeStream(s1), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dy, sizeof out, D2H), OK);
    right = 1;
    for (int i = 0; i < N; i++) {
        right &= out[i] == 2 * x[i] + 0.5f;
    }
    CHECK(right);

    /* The argument builder with a placeholder. */
    aclrtArgsHandle args = NULL;
    aclrtParamHandle p = NULL;
    void *buf = NULL;
    EXPECT(aclrtKernelArgsInit(ind, &args), OK);
    EXPECT(aclrtKernelArgsAppendPlaceHolder(args, &p), OK);
    EXPECT(aclrtKernelArgsGetPlaceHolderBuffer(args, p, 24, &buf), OK);
    void *again = NULL;
    EXPECT(aclrtKernelArgsGetPlaceHolderBuffer(args, p, 24, &again), OK);
    CHECK(again == buf); /* the same buffer, not a new one */
    EXPECT(aclrtKernelArgsGetPlaceHolderBuffer(args, p, 32, &again), INVALID_PARAM);
    uint32_t extra = 1;
    aclrtParamHandle q = NULL;
    EXPECT(aclrtKernelArgsAppend(args, &extra, 4, &q), INVALID_PARAM); /* the kernel takes one */
    memcpy(buf, &host.x, 24);
    EXPECT(aclrtKernelArgsFinalize(args), OK);
    EXPECT(aclrtLaunchKernelWithConfig(ind, 8, s1, &cfg, args, NULL), OK);
    EXPECT(aclrtLaunchKernelWithConfig(ind, 8, s1, &cfg, args, NULL), RT_INVALID_HANDLE); /* consumed */
    EXPECT(aclrtSynchronizeStream(s1), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, dy, sizeof out, D2H), OK);
    right = 1;
    for (int i = 0; i < N; i++) {
        right &= out[i] == 3 * x[i] + 0.5f;
    }
    CHECK(right);

    /* A kernel fault fails its stream's next synchronisation, once. */
    void *unused = dx;
    EXPECT(aclrtLaunchKernelWithHostArgs(trap, 1, s1, &cfg, &unused, 8, NULL, 0), OK);
    EXPECT(aclrtSynchronizeStream(s1), RT_VECTOR_CORE_EXCEPTION);
    msg = aclGetRecentErrMsg();
    CHECK(msg != NULL && strstr(msg, "fault_kernel") != NULL);
    EXPECT(aclrtSynchronizeStream(s1), OK);

    /* IPC within the process: whitelist by PID, then import, close. */
    char key[65];
    int32_t pid = 0;
    void *imported = NULL;
    EXPECT(aclrtIpcMemGetExportKey(dx, sizeof x, key, sizeof key, 0), OK);
    EXPECT(aclrtIpcMemGetExportKey((char *)dx + 64, 64, key, sizeof key, 0), INVALID_PARAM);
    EXPECT(aclrtSetDevice(1), OK);
    EXPECT(aclrtIpcMemImportByKey(&imported, key, 0), RT_PARAM_INVALID);
    EXPECT(aclrtDeviceGetBareTgid(&pid), OK);
    EXPECT(aclrtIpcMemSetImportPid(key, &pid, 1), OK);
    EXPECT(aclrtIpcMemImportByKey(&imported, key, 0), OK);
    EXPECT(aclrtMemcpy(out, sizeof out, imported, sizeof out, D2H), OK);
    CHECK(memcmp(out, x, sizeof x) == 0);
    EXPECT(aclrtIpcMemClose(key), OK);
    EXPECT(aclrtIpcMemImportByKey(&imported, key, 0), INVALID_PARAM);
    /* A freed allocation's key cannot be imported. */
    void *gone = NULL;
    EXPECT(aclrtMalloc(&gone, 4096, 0), OK);
    EXPECT(aclrtIpcMemGetExportKey(gone, 4096, key, sizeof key, 1), OK);
    EXPECT(aclrtFree(gone), OK);
    EXPECT(aclrtIpcMemImportByKey(&imported, key, 0), INVALID_PARAM);
    /* A stream of device 0 is not usable from device 1's thread. */
    EXPECT(aclrtSynchronizeStream(s1), 107003);
    EXPECT(aclrtSetDevice(0), OK);

    /* Host memory, and a binary from memory. */
    void *h = NULL;
    EXPECT(aclrtMallocHost(&h, 4096), OK);
    EXPECT(aclrtFreeHost(x), INVALID_PARAM); /* not from aclrtMallocHost */
    FILE *kf = fopen(argv[1], "rb");
    CHECK(kf != NULL);
    if (kf != NULL) {
        size_t got = fread(h, 1, 4096, kf);
        fclose(kf);
        CHECK(got == 4096);
        /* The first 4 KiB of the object: an ELF header, but not a loadable object. */
        aclrtBinHandle partial = NULL;
        aclError e = aclrtBinaryLoadFromData(h, 4096, NULL, &partial);
        CHECK(e != OK);
    }
    EXPECT(aclrtFreeHost(h), OK);
    EXPECT(aclrtFreeHost(h), INVALID_PARAM); /* freed already */
    EXPECT(aclrtBinaryLoadFromData("not an elf", 10, NULL, &bin), 100006);

    EXPECT(aclrtBinaryUnLoad(bin), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "accumulate", &f), RT_INVALID_HANDLE);
    EXPECT(aclrtDestroyEvent(ev), OK);
    EXPECT(aclrtDestroyStream(s1), OK);
    EXPECT(aclrtDestroyStream(s2), OK);
    EXPECT(aclrtDestroyStream(s2), RT_INVALID_HANDLE);
    EXPECT(aclrtFree(dx), OK);
    EXPECT(aclrtFree(dy), OK);
    EXPECT(aclrtFree(dz), OK);
    EXPECT(aclFinalize(), OK);
    EXPECT(aclFinalize(), 100037); /* ACL_ERROR_REPEAT_FINALIZE */
    if (failures == 0) {
        printf("all checks passed\n");
    }
    return failures == 0 ? 0 : 1;
}
