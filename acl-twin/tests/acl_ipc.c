/*
 * Two processes share device memory through ACL's IPC calls, as the documentation's
 * two-process sequence does (export, whitelist the importer's PID, import, close importer
 * first), written against the documented ACL runtime API alone: its own declarations below,
 * no other header. The exporter (device 0) owns y; the importer (device 1) runs
 * `accumulate(x, y, n)` on its own x and the imported y, so a kernel of one process writes
 * the other's memory. The processes talk over pipes. argv[1]: the kernel binary.
 * Prints one line per failed check and "all checks passed" if none failed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int aclError;
typedef void *aclrtStream;
typedef void *aclrtBinHandle;
typedef void *aclrtFuncHandle;
typedef struct { uint32_t addrOffset; uint32_t dataOffset; } aclrtPlaceHolderInfo;
typedef struct { void *attrs; size_t numAttrs; } aclrtLaunchKernelCfg;

aclError aclInit(const char *configPath);
aclError aclFinalize(void);
const char *aclGetRecentErrMsg(void);
aclError aclrtSetDevice(int32_t deviceId);
aclError aclrtCreateStream(aclrtStream *stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
aclError aclrtMalloc(void **devPtr, size_t size, int policy);
aclError aclrtFree(void *devPtr);
aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, int kind);
aclError aclrtBinaryLoadFromFile(const char *binPath, void *options, aclrtBinHandle *binHandle);
aclError aclrtBinaryGetFunction(const aclrtBinHandle binHandle, const char *kernelName,
                                aclrtFuncHandle *funcHandle);
aclError aclrtLaunchKernelWithHostArgs(aclrtFuncHandle funcHandle, uint32_t numBlocks, aclrtStream stream,
                                       aclrtLaunchKernelCfg *cfg, void *hostArgs, size_t argsSize,
                                       aclrtPlaceHolderInfo *placeHolderArray, size_t placeHolderNum);
aclError aclrtIpcMemGetExportKey(void *devPtr, size_t size, char *key, size_t len, uint64_t flags);
aclError aclrtIpcMemSetImportPid(const char *key, int32_t *pid, size_t num);
aclError aclrtIpcMemImportByKey(void **devPtr, const char *key, uint64_t flags);
aclError aclrtIpcMemClose(const char *key);
aclError aclrtDeviceGetBareTgid(int32_t *pid);

enum { H2D = 1, D2H = 2 };
enum { OK = 0, INVALID_PARAM = 100000, RT_PARAM_INVALID = 107000 };
enum { KEY_LEN = 65, N = 1024 };

static int failures = 0;
static const char *who = "?";

#define EXPECT(call, want)                                                                     \
    do {                                                                                       \
        aclError got_ = (call);                                                                \
        if (got_ != (want)) {                                                                  \
            const char *m_ = aclGetRecentErrMsg();                                             \
            printf("%s, line %d: %s returned %d, expected %d (%s)\n", who, __LINE__, #call,    \
                   got_, (want), m_ ? m_ : "no message");                                      \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("%s, line %d: %s is false\n", who, __LINE__, #cond);                        \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static void put(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n) {
        printf("%s: a pipe write failed\n", who);
        exit(1);
    }
}

static void get(int fd, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)p + got, n - got);
        if (r <= 0) {
            printf("%s: the other process is gone\n", who);
            exit(1);
        }
        got += (size_t)r;
    }
}

static void say(int fd) { put(fd, "!", 1); }
static void hear(int fd) { char c; get(fd, &c, 1); }

/* Device 1: imports y and adds its x to it with a kernel. */
static int importer(int in, int out, const char *binary)
{
    who = "importer";
    EXPECT(aclInit(NULL), OK);
    EXPECT(aclrtSetDevice(1), OK);
    aclrtStream s = NULL;
    EXPECT(aclrtCreateStream(&s), OK);
    aclrtBinHandle bin = NULL;
    aclrtFuncHandle acc = NULL;
    EXPECT(aclrtBinaryLoadFromFile(binary, NULL, &bin), OK);
    EXPECT(aclrtBinaryGetFunction(bin, "accumulate", &acc), OK);
    float x[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
    }
    void *dx = NULL;
    EXPECT(aclrtMalloc(&dx, sizeof x, 0), OK);
    EXPECT(aclrtMemcpy(dx, sizeof x, x, sizeof x, H2D), OK);

    int32_t pid = 0;
    EXPECT(aclrtDeviceGetBareTgid(&pid), OK);
    CHECK(pid == (int32_t)getpid());
    put(out, &pid, sizeof pid);
    char key[KEY_LEN];
    get(in, key, sizeof key);

    /* Not on the whitelist yet; and only the exporter may whitelist. */
    void *y = NULL;
    EXPECT(aclrtIpcMemImportByKey(&y, key, 0), RT_PARAM_INVALID);
    EXPECT(aclrtIpcMemSetImportPid(key, &pid, 1), INVALID_PARAM);
    EXPECT(aclrtIpcMemImportByKey(&y, "not a key", 0), INVALID_PARAM);
    say(out);
    hear(in); /* whitelisted */

    EXPECT(aclrtIpcMemImportByKey(&y, key, 0), OK);
    CHECK(y != NULL);
    /* Imported memory is released with aclrtIpcMemClose, not aclrtFree. */
    EXPECT(aclrtFree(y), INVALID_PARAM);
    struct {
        void *x;
        void *y;
        uint32_t n;
    } args = {dx, y, N};
    EXPECT(aclrtLaunchKernelWithHostArgs(acc, 4, s, NULL, &args, 20, NULL, 0), OK);
    EXPECT(aclrtSynchronizeStream(s), OK);
    /* Importers close first. */
    EXPECT(aclrtIpcMemClose(key), OK);
    EXPECT(aclrtIpcMemClose(key), INVALID_PARAM);
    say(out);
    hear(in); /* the exporter closed the key */
    EXPECT(aclrtIpcMemImportByKey(&y, key, 0), INVALID_PARAM);
    EXPECT(aclrtFree(dx), OK);
    EXPECT(aclFinalize(), OK);
    return failures;
}

/* Device 0: owns y = 0.5 everywhere and exports it. */
static int exporter(int in, int out, pid_t child)
{
    who = "exporter";
    EXPECT(aclInit(NULL), OK);
    EXPECT(aclrtSetDevice(0), OK);
    float y[N];
    for (int i = 0; i < N; i++) {
        y[i] = 0.5f;
    }
    void *dy = NULL;
    EXPECT(aclrtMalloc(&dy, sizeof y, 0), OK);
    EXPECT(aclrtMemcpy(dy, sizeof y, y, sizeof y, H2D), OK);
    char key[KEY_LEN];
    memset(key, 0, sizeof key);
    EXPECT(aclrtIpcMemGetExportKey(dy, sizeof y, key, sizeof key, 0), OK);
    int32_t pid = 0;
    get(in, &pid, sizeof pid);
    CHECK(pid == (int32_t)child);
    put(out, key, sizeof key);
    hear(in); /* it tried before being whitelisted */

    EXPECT(aclrtIpcMemSetImportPid(key, &pid, 0), INVALID_PARAM);
    EXPECT(aclrtIpcMemSetImportPid(key, &pid, 1), OK);
    say(out);
    hear(in); /* its kernel ran and it closed its import */

    EXPECT(aclrtMemcpy(y, sizeof y, dy, sizeof y, D2H), OK);
    int right = 1;
    for (int i = 0; i < N; i++) {
        right &= y[i] == 0.5f + (float)i;
    }
    CHECK(right);
    EXPECT(aclrtIpcMemClose(key), OK);
    say(out);
    EXPECT(aclrtFree(dy), OK);
    EXPECT(aclFinalize(), OK);
    return failures;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        printf("usage: %s KERNEL_BINARY\n", argv[0]);
        return 2;
    }
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0) {
        perror("pipe");
        return 2;
    }
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        int f = importer(to_child[0], to_parent[1], argv[1]);
        fflush(stdout);
        _exit(f == 0 ? 0 : 1);
    }
    int f = exporter(to_parent[0], to_child[1], child);
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("the importer failed (status %d)\n", status);
        f++;
    }
    if (f == 0) {
        printf("all checks passed\n");
    }
    return f == 0 ? 0 : 1;
}
