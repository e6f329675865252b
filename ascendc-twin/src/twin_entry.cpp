// Launch trampoline of the CPU twin: runs one block of a kernel and turns the twin's abort
// exception (thrown by kernel_operator.h after the runtime recorded a fault) into a return code,
// so no C++ exception ever unwinds into Rust.
#include <cstdint>

#include "kernel_operator.h"

extern "C" int32_t asc_twin_invoke(void (*kernel)(uint8_t *), uint8_t *args)
{
    try {
        kernel(args);
        return 0;
    } catch (const AscTwinAbort &) {
        return 1;
    } catch (...) {
        return 2;
    }
}
