/*
 * The ACL runtime's base types for the host half of an AscendC program built for the twin
 * (a `.asc` file's host `main`, or a kernel source that includes `acl/acl.h` for its host half).
 *
 * Written for aiv-comm from the public ACL documentation (the names, types and values it
 * lists); the functions are implemented by acl-twin (libascendcl.so over the twin). Only what
 * acl-twin implements is declared: a program that calls anything else fails to compile here,
 * naming the function, instead of failing at run time.
 */
#ifndef ASC_TWIN_ACL_BASE_H
#define ASC_TWIN_ACL_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef uint16_t aclFloat16;

/* Status codes (the ACL documentation's values; ascendc-sys pins the same numbers). */
#define ACL_SUCCESS 0
#define ACL_ERROR_NONE 0
#define ACL_ERROR_INVALID_PARAM 100000
#define ACL_ERROR_UNINITIALIZE 100001
#define ACL_ERROR_REPEAT_INITIALIZE 100002
#define ACL_ERROR_INVALID_FILE 100003
#define ACL_ERROR_PARSE_FILE 100006
#define ACL_ERROR_REPEAT_FINALIZE 100037
#define ACL_ERROR_BAD_ALLOC 200000
#define ACL_ERROR_RT_PARAM_INVALID 107000
#define ACL_ERROR_RT_INVALID_DEVICEID 107001
#define ACL_ERROR_RT_CONTEXT_NULL 107002
#define ACL_ERROR_RT_INVALID_HANDLE 107017
#define ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000
#define ACL_ERROR_RT_MEMORY_ALLOCATION 207001
#define ACL_ERROR_INTERNAL_ERROR 500000
#define ACL_ERROR_RT_INTERNAL_ERROR 507000
#define ACL_ERROR_RT_VECTOR_CORE_TIMEOUT 507034
#define ACL_ERROR_RT_VECTOR_CORE_EXCEPTION 507035
#define ACL_ERROR_RT_VECTOR_CORE_TRAP_EXCEPTION 507036
#define ACL_ERROR_RT_STREAM_SYNC_TIMEOUT 507046

/* Starts and ends the runtime; `configPath` may be null. */
aclError aclInit(const char *configPath);
aclError aclFinalize(void);
/* The calling thread's latest error text (null if none since the last read). */
const char *aclGetRecentErrMsg(void);

/* IEEE half <-> float, round to nearest even. */
float aclFloat16ToFloat(aclFloat16 value);
aclFloat16 aclFloatToFloat16(float value);

#ifdef __cplusplus
}
#endif

#endif /* ASC_TWIN_ACL_BASE_H */
