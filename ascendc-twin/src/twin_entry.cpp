// Launch trampoline of the CPU twin: runs one block of a kernel and turns the twin's abort
// exception (thrown by kernel_operator.h after the runtime recorded a fault) into a return code,
// so no C++ exception ever unwinds into Rust. Compiling it also checks the layout pins of
// asc_twin_abi.h and asc_twin_launch.h (static_asserts) on every build of the twin.
#include <cstdint>

#include "kernel_operator.h"
#include "asc_twin_launch.h"

extern "C" int32_t asc_twin_invoke(void (*kernel)(uint8_t *), uint8_t *args)
{
    try {
        kernel(args);
        return ASC_TWIN_BLOCK_OK;
    } catch (const AscTwinAbort &) {
        return ASC_TWIN_BLOCK_ABORTED;
    } catch (...) {
        return ASC_TWIN_BLOCK_UNKNOWN_EXCEPTION;
    }
}
