// SPDX-License-Identifier: Apache-2.0
// The former name of edgelock/async_client.hpp, kept for one release: include
// edgelock/async_client.hpp.
#pragma once

#include "edgelock/async_client.hpp"
