// SPDX-License-Identifier: Apache-2.0
#include "edgelock/sim/svg.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace edgelock::sim {
namespace {

constexpr double width_px = 1200;
constexpr double label_px = 150;
constexpr double lane_px = 34;
constexpr double top_px = 56;

struct canvas {
    std::string out;
    std::int64_t end_us = 1;

    double x(std::int64_t us) const {
        const double span = static_cast<double>(std::max<std::int64_t>(end_us, 1));
        return label_px + (width_px - label_px - 10) *
                              static_cast<double>(std::clamp<std::int64_t>(us, 0, end_us)) / span;
    }
    static double y(std::size_t lane) { return top_px + static_cast<double>(lane) * lane_px; }

    void rect(double x0, double y0, double w, double h, const char* fill, const char* extra = "") {
        char text[256];
        std::snprintf(
            text, sizeof text,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" %s/>\n", x0, y0,
            std::max(w, 1.0), h, fill, extra);
        out += text;
    }
    void span(std::size_t lane, std::int64_t from, std::int64_t to, double inset, const char* fill,
              const char* extra = "") {
        rect(x(from), y(lane) + inset, x(to) - x(from), lane_px - 2 * inset, fill, extra);
    }
    void label(double x0, double y0, const std::string& text, const char* extra = "") {
        out += "<text x=\"" + std::to_string(x0) + "\" y=\"" + std::to_string(y0) + "\" " + extra +
               ">" + escape(text) + "</text>\n";
    }
    static std::string escape(const std::string& text) {
        std::string e;
        for (char c : text) {
            if (c == '<') e += "&lt;";
            else if (c == '>') e += "&gt;";
            else if (c == '&') e += "&amp;";
            else if (c == '"') e += "&quot;";
            else e += c;
        }
        return e;
    }
};

struct belief {
    std::uint8_t client;
    std::int64_t start_us;
    std::int64_t end_us;
};

void draw_header(canvas& c, const run_spec& spec, const run_result& result, double height) {
    char head[512];
    std::snprintf(head, sizeof head,
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                  "font-family=\"monospace\" font-size=\"11\">\n",
                  width_px, height);
    c.out += head;
    c.rect(0, 0, width_px, height, "white");
    std::string title = "config " + std::string(spec.config->name) + ", seed " +
                        std::to_string(spec.seed) + ": " +
                        std::string(result.checks.all_ok() ? "all checks ok" : "VIOLATED");
    c.label(10, 18, title, "font-size=\"14\"");
    std::string checks;
    for (std::size_t k = 0; k < check_count; ++k) {
        checks += std::string(to_string(static_cast<check_kind>(k))) +
                  (result.checks.checks[k].ok ? "=ok  " : "=VIOLATED  ");
    }
    c.label(10, 36, checks);
}

// Lanes (clients, Redis nodes, the resource) and the time axis.
void draw_lanes(canvas& c, std::size_t clients, std::size_t resource_lane) {
    for (std::size_t lane = 0; lane <= resource_lane; ++lane) {
        c.rect(label_px, canvas::y(lane), width_px - label_px - 10, lane_px,
               lane % 2 == 0 ? "#f6f6f6" : "#ececec");
        std::string name = lane < clients         ? "client c" + std::to_string(lane)
                           : lane < resource_lane ? "redis n" + std::to_string(lane - clients)
                                                  : "resource";
        c.label(10, canvas::y(lane) + lane_px / 2 + 4, name);
    }
    for (std::int64_t t = 0; t <= c.end_us; t += 500'000) {
        const double x = c.x(t);
        char line[160];
        std::snprintf(
            line, sizeof line,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#cccccc\"/>\n", x,
            canvas::y(0), x, canvas::y(resource_lane + 1));
        c.out += line;
        c.label(x - 10, canvas::y(resource_lane + 1) + 14, std::to_string(t / 1000) + "ms");
    }
}

void draw_mark(canvas& c, const world_mark& m, std::size_t lane) {
    switch (m.what) {
        case world_mark::kind::crash:
            c.span(lane, m.start_us, m.end_us, 4, "#555555", "opacity=\"0.8\"");
            c.label(c.x(m.start_us) + 2, canvas::y(lane) + 12, "crash", "fill=\"white\"");
            break;
        case world_mark::kind::restart:
        case world_mark::kind::promote:
            c.rect(c.x(m.start_us) - 2, canvas::y(lane) + 2, 4, lane_px - 4,
                   m.what == world_mark::kind::promote ? "#2a9d2a" : "#333333");
            c.label(c.x(m.start_us) + 4, canvas::y(lane) + lane_px - 4,
                    m.what == world_mark::kind::promote ? "promoted" : "restart");
            break;
        case world_mark::kind::fault: {
            const bool instant = m.end_us <= m.start_us;
            if (instant) {
                c.rect(c.x(m.start_us) - 1, canvas::y(lane), 2, lane_px, "#8e44ad");
            } else {
                c.span(lane, m.start_us, m.end_us, 1, "#8e44ad", "opacity=\"0.15\"");
            }
            c.out += "<title>" + canvas::escape(m.label) + "</title>\n";
            c.label(c.x(m.start_us) + 3, canvas::y(lane) + 10, m.label.substr(0, m.label.find('@')),
                    "fill=\"#8e44ad\" font-size=\"9\"");
            break;
        }
        default: break;
    }
}

// Holds and acted-on checks, then where beliefs of different clients overlap.
void draw_beliefs(canvas& c, const history& past) {
    std::vector<belief> beliefs;
    for (const hold_record& h : past.holds) {
        c.span(h.client, h.start_us, h.end_us, 9, "#3b7dd8", "opacity=\"0.85\"");
        c.label(c.x(h.start_us) + 2, canvas::y(h.client) + lane_px / 2 + 4,
                "#" + std::to_string(h.index) +
                    (past.fencing ? " t" + std::to_string(h.fence) : ""),
                "fill=\"white\" font-size=\"9\"");
        beliefs.push_back({h.client, h.start_us, h.end_us});
    }
    for (const action_record& a : past.actions) {
        c.span(a.client, a.check_us, a.send_us, 12, "#f39c12", "opacity=\"0.9\"");
        beliefs.push_back({a.client, a.check_us, a.send_us});
    }
    for (std::size_t i = 0; i < beliefs.size(); ++i) {
        for (std::size_t j = i + 1; j < beliefs.size(); ++j) {
            const belief& a = beliefs[i];
            const belief& b = beliefs[j];
            if (a.client == b.client) continue;
            const std::int64_t from = std::max(a.start_us, b.start_us);
            const std::int64_t to = std::min(a.end_us, b.end_us);
            if (from >= to) continue;
            for (std::uint8_t lane : {a.client, b.client})
                c.span(lane, from, to, 0, "#e02020", "opacity=\"0.35\"");
        }
    }
}

// The resource: reads as squares, writes as circles; refused in red, stale in a red ring:
// as the stale check judges it, the lock's rule, per permit for a fenced semaphore (an
// unfenced one's needs the holders' beliefs, and its writes are not ringed).
void draw_resource(canvas& c, const history& past, std::size_t resource_lane) {
    std::array<std::uint32_t, resource_permits_max> latest{};  // a hold index + 1; 0: none
    const bool ringed = past.permits == 1 || past.fencing;
    for (const resource_record& op : past.resource_ops) {
        const double x = c.x(op.at_us);
        const double y = canvas::y(resource_lane) + lane_px / 2;
        const char* fill = op.accepted ? "#2a9d2a" : "#e02020";
        const std::size_t permit =
            op.hold < past.holds.size() ? past.holds[op.hold].permit % latest.size() : 0;
        const bool stale = ringed && op.accepted && op.write && op.hold + 1 < latest[permit];
        char shape[256];
        if (op.write) {
            std::snprintf(
                shape, sizeof shape, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"%s/>\n",
                x, y, stale ? 7 : 4, fill, stale ? " stroke=\"#e02020\" stroke-width=\"3\"" : "");
        } else {
            std::snprintf(shape, sizeof shape,
                          "<rect x=\"%.1f\" y=\"%.1f\" width=\"5\" height=\"5\" fill=\"%s\"/>\n",
                          x - 2.5, y - 12, fill);
        }
        c.out += shape;
        if (op.accepted) latest[permit] = std::max(latest[permit], op.hold + 1);
    }
}

}  // namespace

std::string render_svg(const run_spec& spec, const run_result& result) {
    canvas c;
    c.end_us = result.simulated_us;
    const std::size_t clients = spec.params.clients;
    const std::size_t nodes = spec.config->nodes;
    const std::size_t resource_lane = clients + nodes;
    const double height = canvas::y(resource_lane + 1) + 40;
    draw_header(c, spec, result, height);
    draw_lanes(c, clients, resource_lane);
    for (const world_mark& m : result.marks) {
        if ((m.on_node && m.target >= nodes) || (!m.on_node && m.target >= clients)) continue;
        draw_mark(c, m, m.on_node ? clients + m.target : m.target);
    }
    draw_beliefs(c, result.past);
    draw_resource(c, result.past, resource_lane);
    c.label(10, height - 10,
            "blue: hold (held() true)   orange: acting on an earlier check   "
            "red band: two clients believe they hold   purple: fault   grey: node down   "
            "circle: write (green accepted, red refused, ringed: stale)",
            "font-size=\"9\"");
    c.out += "</svg>\n";
    return c.out;
}

}  // namespace edgelock::sim
