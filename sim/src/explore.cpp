#include "edgelock/sim/explore.hpp"

namespace edgelock::sim {

explore_result explore(const configuration&, std::size_t, std::uint64_t) { return {}; }

}  // namespace edgelock::sim
