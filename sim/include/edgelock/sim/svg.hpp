// SPDX-License-Identifier: Apache-2.0
// edgelock sim: a run's timeline as an SVG picture.
//
// One lane per client (its holds, the windows in which it acted on an earlier check, its
// pauses and partitions), one lane per Redis node (crashes, restarts, promotions, clock
// steps), and one for the resource (writes accepted in green, rejected in red). The x axis
// is true time. Violations are drawn over the lanes: overlapping beliefs in red.
#pragma once

#include <string>

#include "edgelock/sim/world.hpp"

namespace edgelock::sim {

std::string render_svg(const run_spec& spec, const run_result& result);

}  // namespace edgelock::sim
