/* SPDX-License-Identifier: Apache-2.0 */
/* edgelock.h alone, as C (built as C99 and C11 by capi/CMakeLists.txt): no C++ crept in. */
#include "edgelock.h"

int edgelock_header_check(void);

int edgelock_header_check(void) {
    edgelock_options options;
    edgelock_options_init(&options, sizeof options);
    return (int)sizeof(edgelock_metrics) + EDGELOCK_OK;
}
