#include "edgelock/sim/svg.hpp"

namespace edgelock::sim {

std::string render_svg(const run_spec&, const run_result&) { return "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n"; }

}  // namespace edgelock::sim
